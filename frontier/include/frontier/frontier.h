// The crawl frontier: per-host FIFO queues, a politeness schedule, and a
// memory bound with disk spill.
//
// Every URL enters through Admit, which asks the one dedup filter first (so a
// URL is queued at most once per crawl), then goes to its host's FIFO queue
// (host = "scheme://host[:port]" of the normalized URL). Pop hands out the
// next URL of a host that is
//   - open: the engine has its robots.txt decision (OpenHost), so no page of
//     a host is fetched before its robots.txt (RFC 9309);
//   - due: its politeness delay has passed. After a fetch ends (Done) the
//     host waits max(min_delay, its Crawl-delay capped at max_crawl_delay,
//     response_factor x the response time); two request starts to one host
//     are always at least min_delay apart;
//   - under max_connections_per_host transfers in flight.
// Among due hosts the one due longest ago goes first; within a host,
// breadth-first: the lowest depth first, FIFO within a depth, and revisits
// (UrlEntry::revisit) after every new URL, FIFO among themselves: a host
// whose revisits alone would keep it busy still comes to its new URLs, and
// its revisits come in due order, not shallow pages first. (A host's
// spilled URLs are read back before its RAM queue whenever the smallest depth
// ever spilled since its file was last drained is below the RAM queue's.)
//
// Memory bound: at most max_memory_urls queued URLs live in RAM. Beyond it, a
// host's newer URLs go to an append-only spill file under spill_dir (one per
// host that spills) and are read back in order, a chunk at a time, when its
// RAM part runs dry. Spilled URLs on their way to disk wait in a write buffer of
// at most min(8,192, max_memory_urls / 4) URLs. Per-host bookkeeping stays in RAM
// (a few hundred bytes a host), so RAM grows with hosts, not with queued URLs.
//
// Spill file record (little-endian): depth u32 | redirects u32 | attempt u32 |
// kind u32 | url_len u32 | ref_len u32 | url | referrer. Files are this process's
// scratch: a host's spill files are numbered, a drained file is never reused, and it is
// only removed by RemoveDrained, so a forked checkpoint writer that reads or links the
// unread part of each file (ForEachEntry) never sees a file vanish or change under it.
// Checkpoints store the queue itself, and each spill file's unread range as a hard link
// to the file (frontier/image.h, crawler/checkpoint.h).
//
// Checkpoints: every handed-out Lease stays recorded until Done/Release, so
// ForEachEntry can list the URLs in flight next to the queued ones, and
// RestoreHost + Requeue rebuild a frontier from such a listing.
//
// Time is passed in by the caller (a steady_clock time point), so tests drive
// the schedule with a fake clock. Thread-safe: every method may be called from
// any thread; one mutex guards all state and no I/O but the spill's runs under it.
#ifndef FRONTIER_FRONTIER_H_
#define FRONTIER_FRONTIER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "dedup/filter.h"

namespace crawler::frontier {

using Clock = std::chrono::steady_clock;

struct UrlEntry {
  std::string url;  // normalized
  uint32_t depth = 0;
  std::string referrer;
  uint32_t redirects = 0;  // redirect hops that led here (0 for links and seeds)
  uint32_t attempt = 0;    // failed fetches of it so far (Frontier::Retry)
  // What the engine does with the body: a page (links followed) or a
  // sitemap (its <loc>s admitted). The frontier only keeps it.
  enum class Kind : uint8_t { kPage = 0, kSitemap = 1 };
  Kind kind = Kind::kPage;
  // Queued again by the crawl's URL history ([recrawl]), not found as a
  // link: served after the host's new URLs, FIFO among revisits (so in due
  // order), whatever its depth (which its links still count from).
  bool revisit = false;
};

struct FrontierOptions {
  uint64_t max_memory_urls = 100'000;
  std::string spill_dir;  // required when spilling can happen
  double min_delay_s = 1.0;
  double max_crawl_delay_s = 30.0;  // a robots.txt Crawl-delay above this is capped
  double response_factor = 0.0;     // k: wait k x the last response time
  uint32_t max_connections_per_host = 1;
  // Of the hosts due at once, the one with the most work left goes first:
  // its queued URLs x its seconds per request (response and wait, as last
  // seen), at most 10 s of it, less how long it has been due: a host due
  // among the first 64 waits at most 10 s longer than the others there,
  // however much a big host holds. Bounded crawls then end with
  // every host finishing together, not with one host's long queue fetched
  // a request at a time after the others are done. false: the host due
  // longest ago goes first (hosts take turns).
  bool most_work_first = true;
  uint32_t spill_chunk = 1024;  // URLs read back from disk at a time
  // Host back-off: a host that says it is overloaded (429, 503) doubles its
  // delay after each fetch (to at least twice its usual delay and at least
  // backoff_min_s, at most backoff_max_s); each answered fetch halves it
  // again, back to the usual delay once it falls below backoff_min_s.
  double backoff_min_s = 1.0;
  double backoff_max_s = 60.0;
  // A host that could not be connected to this many fetches in a row is
  // parked: its next fetch waits park_s (0: never parked), and so after
  // every further failure. Its queue is kept.
  uint32_t park_after = 5;
  double park_s = 60.0;
  // Politeness per address as well as per host (shared hosting puts
  // thousands of hosts on one address): over every host on one address
  // (SetAddress), request starts at least min_delay_ip_s apart and each at
  // least min_delay_ip_s after the last request there ended, and at most
  // max_connections_per_ip at once. Defaults derived from the per-host
  // limits: -1 is min_delay_s / 4 and 0 is 4 x max_connections_per_host,
  // so an address serves at most four hosts' worth of requests.
  double min_delay_ip_s = -1;
  uint32_t max_connections_per_ip = 0;
  // These options as the frontier applies them: the derived defaults above
  // filled in.
  FrontierOptions Resolved() const;
};

// What a fetch's outcome says about its host (Frontier::Done, Retry).
enum class HostSignal {
  kAnswered,     // a response, not "overloaded": the back-off decays
  kOverloaded,   // 429 or 503: the host's delay doubles
  kUnreachable,  // no connection at all: counts toward parking
  kNone,         // says nothing about the host (e.g. a bad URL)
  // Its name did not resolve for now (a lookup failed: a resolver outage):
  // the whole host waits for a retry's back-off, as kUnreachable, but it
  // neither slows down nor counts toward parking. Without the hold, each
  // queued URL of the host was tried in turn and spent its retries within
  // a few politeness delays of an outage.
  kUnresolved,
};

// A URL handed out by Pop; give it back with Done.
struct Lease {
  UrlEntry entry;
  std::string host;
  uint64_t id = 0;  // unique per Pop
  // The host's address when it was handed out (SetAddress; "" while not
  // known yet): where its request counts.
  std::string address = {};
  Clock::time_point popped = {};  // the Pop's `now` (Defer undoes its start)
};

// A host's schedule state, for checkpoints.
struct HostImage {
  std::string key;
  bool open = false;
  double crawl_delay_s = 0;
  double due_in_s = 0;  // seconds until it may be fetched again (<= 0: due)
};

// A host's spilled URLs at a checkpoint cut: the unread records [offset,
// end) of its spill file. A checkpoint keeps the file itself (a hard link)
// and this range (frontier/image.h), and a resumed frontier adopts it
// (Frontier::AdoptSpill) instead of decoding and spilling every URL again.
struct SpillRange {
  std::string host;     // host key
  std::string path;     // the file
  uint64_t offset = 0;  // the first unread record
  uint64_t end = 0;     // the end of the last record at the cut
  uint64_t count = 0;   // records in [offset, end)
  // The smallest depth the host spilled since its file was last drained
  // (Pop reads the file first when it is below the RAM part's).
  uint32_t min_depth = UINT32_MAX;
  std::vector<std::pair<uint32_t, uint64_t>> depths;  // records by depth, ascending
};

struct FrontierStats {
  uint64_t queued_memory = 0;
  uint64_t queued_disk = 0;
  uint64_t in_flight = 0;
  uint64_t hosts = 0;
  uint64_t hosts_waiting_robots = 0;  // not opened yet
  uint64_t hosts_ready = 0;           // open, non-empty, due now
  uint64_t hosts_waiting_politeness = 0;
  uint64_t hosts_waiting_ip = 0;   // of those: their address is busy
  uint64_t addresses = 0;          // addresses known (SetAddress)
  uint64_t hosts_backing_off = 0;  // slowed down after 429/503 (any state)
  uint64_t hosts_parked = 0;       // unreachable park_after times in a row
  uint64_t admitted = 0;           // URLs that passed dedup
  uint64_t duplicates = 0;         // URLs the filter had seen
  uint64_t refused_full = 0;       // a fixed filter was full: not queued, counted
  uint64_t spilled = 0;            // URLs ever written to disk
  std::vector<std::pair<uint32_t, uint64_t>> depths;  // queued URLs by depth (ascending)
};

// Heap bytes the frontier holds (base/heap_bytes.h: counted from its
// containers): the URLs queued in RAM, leased or buffered for a spill file
// (each entry and its strings), and everything kept per host and per
// address (keys, queues' shells, the schedule, the indexes).
struct FrontierMemory {
  uint64_t urls = 0;
  uint64_t hosts = 0;
  uint64_t addresses = 0;  // the per-address records (politeness per address)
};

struct AdmitResult {
  uint64_t admitted = 0;
  uint64_t duplicates = 0;
  uint64_t refused_full = 0;
  std::vector<std::string>
      new_hosts;  // hosts seen for the first time: fetch their robots.txt
};

// "scheme://host[:port]" of a normalized URL ("" if it has no "://").
std::string_view HostKey(std::string_view url);

class Frontier {
 public:
  static Result<std::unique_ptr<Frontier>> Create(const FrontierOptions& options);
  ~Frontier();
  Frontier(const Frontier&) = delete;
  Frontier& operator=(const Frontier&) = delete;

  // Asks `filter` about every entry (one batch) and queues the new ones
  // (their indices in `entries` go to *inserted, if given): each at the
  // back of its host's URLs of its depth, a redirect's target
  // (UrlEntry::redirects > 0) at their front.
  // Errors only on spill I/O failure, naming the file; entries already
  // queued stay queued.
  [[nodiscard]] Result<AdmitResult> Admit(std::vector<UrlEntry> entries,
                                          dedup::Filter& filter,
                                          std::vector<size_t>* inserted = nullptr);

  // The robots.txt decision for `host` is known: its URLs may be handed out.
  // `crawl_delay_s`: the host's Crawl-delay, if any. If `fetched_at` is given
  // (when the robots.txt fetch ended), the first page waits the host's delay
  // after it: a robots.txt request counts for politeness like any other.
  void OpenHost(std::string_view host, std::optional<double> crawl_delay_s,
                std::optional<Clock::time_point> fetched_at = std::nullopt);

  // The next due URL, or nullopt. When nullopt and URLs are queued in open
  // hosts, *next_due (if given) is when the earliest host becomes due.
  [[nodiscard]] Result<std::optional<Lease>> Pop(Clock::time_point now,
                                                 Clock::time_point* next_due = nullptr);

  // The fetch of `lease` ended at `now` after `response_s` seconds;
  // `signal` updates the host's back-off and parking (FrontierOptions).
  void Done(const Lease& lease, Clock::time_point now, double response_s,
            HostSignal signal = HostSignal::kAnswered);
  // `host` is served at `address` (its last fetch's): it shares that
  // address's politeness from now on (FrontierOptions::min_delay_ip_s,
  // max_connections_per_ip), with its URLs in flight. A host whose address
  // changes moves with it. Not in the checkpoint: a resumed host's address
  // is learned again from its next fetch.
  void SetAddress(std::string_view host, std::string_view address);
  // A fetch outside the queues (a robots.txt) at `address`: true, and
  // counted as started there, if the address's politeness allows one now;
  // EndAt when it ends.
  bool TryStartAt(std::string_view address, Clock::time_point now);
  void EndAt(std::string_view address, Clock::time_point now);
  // The start TryStartAt counted at `now` was not made after all: the
  // address is as before it, unless something since moved its next start
  // (an end, a hold, another start), which then stands.
  void UndoStartAt(std::string_view address, Clock::time_point now);
  // No request starts at `address` before `until` (a multi-machine job's
  // politeness per address said wait: the other machines' requests there
  // count too). Its hosts wait in its line meanwhile.
  void HoldAddress(std::string_view address, Clock::time_point until);
  // The request of `lease` ended at `ended` (its response is in, to be
  // processed): its address's connection is free for another host's
  // request (max_connections_per_ip counts requests, not results waiting
  // to be parsed), min_delay_ip_s after `ended`. The host's own slot is
  // freed by Done, Retry or Release, as before.
  void Ended(const Lease& lease, Clock::time_point ended);
  // `lease` was not fetched (e.g. robots.txt forbids it): frees its slot
  // without a politeness delay.
  void Release(const Lease& lease);
  // `lease` may not be fetched yet (a cluster node that lost its host's
  // shard lease, or is waiting for its turn at the address): its URL goes
  // back to the head of its host's queue and the host is not handed out
  // again before `until`. No request was made: the host's min_delay_s and
  // its address's min_delay_ip_s run from their last real start, as if it
  // had not been popped (unless something since moved them). Else a node
  // waiting a few ms for a turn from Redis held its host min_delay_s and
  // its address min_delay_ip_s for nothing, and the turn lapsed meanwhile.
  void Defer(const Lease& lease, Clock::time_point until);

  // `lease`'s fetch failed at `now` after `response_s` and is tried again
  // (attempt + 1; it does not pass dedup again). The host's politeness delay
  // and `signal` apply as after Done. The URL goes behind its host's queued
  // URLs of its depth (Pop hands out shallower URLs first); the host is not
  // handed out before `until` if `signal` is kOverloaded or kUnreachable or
  // if nothing else of it is queued, so the retry waits at least its
  // back-off or the host's other URLs. Errors only on spill I/O failure,
  // naming the file.
  [[nodiscard]] Status Retry(const Lease& lease, Clock::time_point now, double response_s,
                             Clock::time_point until, HostSignal signal);

  FrontierStats Stats(Clock::time_point now) const;
  // Walks every host and every URL in RAM under the lock (memory_bench:
  // 8 ms for 10^5 hosts and 4x10^5 URLs, 46 ms for 10^6 and 10^6): for
  // the stats report (every 2 s, each scrape, each checkpoint), not per
  // request.
  FrontierMemory Memory() const;
  // `host` ("scheme://host[:port]") is parked (FrontierOptions::park_after).
  bool Parked(std::string_view host) const;

  // Checkpoint image. Calls `host` for every host, then `url` for every URL
  // in flight (leased = true, in Pop order) and every queued one, host by
  // host, in the order Pop would hand them out (RAM by depth, then spilled,
  // then not yet flushed). Reads spill files; an error names the file.
  // With `spill`, a host's spilled part is offered to it as a SpillRange
  // first (in its place in that order): it returns true when it took the
  // range (a checkpoint links the file), false to have it listed through
  // `url` instead, or an error. The file's bytes up to range.end never
  // change after this call (records are only appended, a drained file is
  // never reused, and only RemoveDrained deletes one).
  // REQUIRES: no other thread changes the frontier meanwhile (the engine
  // calls it in a forked child or after its workers have stopped).
  Status ForEachEntry(
      Clock::time_point now, const std::function<Status(const HostImage&)>& host,
      const std::function<Status(const UrlEntry&, bool leased)>& url,
      const std::function<Result<bool>(const SpillRange&)>& spill = nullptr) const;
  // Rebuilding from an image: a host's state, then its URLs (no dedup check:
  // they passed it before the checkpoint). Requeue may spill.
  void RestoreHost(const HostImage& image, Clock::time_point now);
  [[nodiscard]] Status Requeue(UrlEntry entry);
  // Rebuilding: the host's next queued URLs are the records of `range`
  // (range.path: a checkpoint's link, verified by the caller). They are
  // copied into a spill file of this frontier in one kernel-side copy
  // (copy_file_range; read/write across file systems), not decoded and
  // spilled again; range.depths counts them. If the host already spills
  // (its RAM part did not fit), they are read and queued one by one
  // instead, after what it holds. range.path is never changed (an older
  // checkpoint may share it). Errors name the file.
  [[nodiscard]] Status AdoptSpill(const SpillRange& range);
  // A cluster node that handed hosts over to another node (their state is
  // in a checkpoint the other node loads): forgets every queued URL of each
  // host `handed(key)` selects, RAM and disk (a spill file is removed with
  // RemoveDrained, as a checkpoint writer may still read it). Their URLs in
  // flight stay (none, by the engine's rule: it drains them first). Returns
  // the URLs forgotten.
  uint64_t DropHosts(const std::function<bool(std::string_view)>& handed);
  // URLs in flight of the hosts `which(key)` selects.
  uint64_t InFlight(const std::function<bool(std::string_view)>& which) const;
  // Calls `f(key, queued)` for every host with URLs queued (RAM and disk),
  // under the frontier's mutex: `f` must be quick and call nothing of it.
  // O(hosts): a cluster node weighs its shards' backlog with it (work-aware
  // placement), seldom.
  void ForEachQueued(const std::function<void(std::string_view, uint64_t)>& f) const;
  // Deletes spill files that have been read back completely. Call it when no
  // checkpoint writer may be reading them.
  void RemoveDrained();
  // Queued + in flight == 0.
  bool Empty() const;

 private:
  struct Impl;
  explicit Frontier(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace crawler::frontier

#endif  // FRONTIER_FRONTIER_H_
