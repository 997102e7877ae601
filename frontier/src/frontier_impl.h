// Frontier::Impl: the frontier's state and its locked helpers, shared by
// frontier.cc (the queue) and spill_files.cc (the spill files at a
// checkpoint: listing them, adopting them on resume). Private to frontier/.
#ifndef FRONTIER_FRONTIER_IMPL_H_
#define FRONTIER_FRONTIER_IMPL_H_

#include <xxhash.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/bytes.h"
#include "base/file_util.h"
#include "base/mutex.h"
#include "frontier/frontier.h"
#include "host_backoff.h"
#include "ram_queue.h"
#include "spill_record.h"

namespace crawler::frontier {

// Pending spill records held in RAM across all hosts before they are
// appended to their files (amortises open/append/close); at most a quarter
// of max_memory_urls, so a small bound is not exceeded by the buffer (with
// max_memory_urls = 50 a crawl's spilled URLs never reached a file: a host
// that ran dry took its whole buffer into RAM, 9,600 URLs).
constexpr uint64_t kMaxBufferedSpill = 8192;

struct Frontier::Impl {
  static constexpr uint32_t kNoIp = UINT32_MAX;
  static constexpr size_t kNoHost = SIZE_MAX;

  // The fields in an order with little padding: 248 bytes on Debian 12
  // x86-64 (the same before cycle_s took 4 spare bytes; at most 256, the
  // static_assert below), in a jemalloc size class below 320 (memory_bench:
  // the frontier's bytes per host).
  struct Host {
    std::string key;
    RamQueue ram;              // by rank, FIFO within one
    std::string spill_path;    // "" until the host spills (again)
    uint64_t on_disk = 0;      // records in the file not yet read back
    uint64_t read_offset = 0;  // byte offset of the next unread record
    uint64_t file_bytes = 0;   // the file's size: the end of its last record
    // The file's unread records by depth (a checkpoint records them with the
    // file, so a resumed frontier counts depths without reading it).
    std::map<uint32_t, uint64_t> file_depths;
    std::vector<UrlEntry> write_buf;  // FIFO tail, after the file's records
    double crawl_delay_s = 0;
    Clock::time_point due{};
    HostBackoff backoff;
    uint32_t disk_min_depth =
        UINT32_MAX;          // smallest depth spilled since the file was drained
    uint32_t spill_gen = 0;  // files are numbered; a drained one is not reused
    uint32_t in_flight = 0;
    // Its address (Ip index; kNoIp: not known yet), and whether it waits in
    // that address's line (Ip::parked) instead of the schedule.
    uint32_t ip = kNoIp;
    // Seconds from one request start to the next as last seen (the
    // response time and the wait after it; 0: none yet): its queue's work
    // is Queued() x cycle_s (PickDue).
    float cycle_s = 0;
    bool ip_parked = false;
    bool open = false;
    bool scheduled = false;
    uint64_t Queued() const { return ram.size() + on_disk + write_buf.size(); }
    void PushRam(UrlEntry e) { ram.PushBack(std::move(e)); }
    UrlEntry PopRam() { return ram.Pop(); }
    // The spilled part holds a URL shallower than everything in RAM.
    bool DiskFirst() const {
      return Spilling() && (ram.empty() || disk_min_depth < ram.MinRank());
    }
    bool Spilling() const { return on_disk + write_buf.size() > 0; }
  };
  static_assert(sizeof(Host) <= 256, "a field added to Host outgrew its padding");

  static constexpr uint32_t kNoWaker = UINT32_MAX;

  // One address's politeness over all its hosts: 64 bytes, ~90 with its
  // ip_index node and bucket (memory_bench --addresses). Its slot is freed
  // for another address once no host refers to it, no request is under way
  // there and its next start is due (ReclaimIps).
  struct Ip {
    std::string address;      // "" while the slot is free
    Clock::time_point due{};  // the next request start allowed
    uint32_t in_flight = 0;
    uint32_t hosts = 0;  // hosts whose address it is (Host::ip)
    // At most one host of its line (`waker`) is scheduled to come back
    // when the address is due.
    uint32_t waker = kNoWaker;
    bool idle_listed = false;  // in idle_ips
    // Hosts due but held for this address, first come first served. Only
    // while any wait: an empty std::deque holds ~600 bytes.
    std::unique_ptr<std::deque<uint32_t>> parked;
  };
  static_assert(sizeof(Ip) <= 64, "a field added to Ip outgrew its padding");

  // ip_index's hash and equality: an entry is a slot of `ips`, found by its
  // address (heterogeneous lookup), so the address is held once. Hashing
  // is noexcept: libstdc++ then keeps no hash in a node (16 bytes).
  struct IpKey {
    using is_transparent = void;
    const std::deque<Ip>* ips;
    std::string_view Of(std::string_view a) const noexcept { return a; }
    std::string_view Of(uint32_t slot) const noexcept { return (*ips)[slot].address; }
    template <class K>
    size_t operator()(const K& k) const noexcept {
      return std::hash<std::string_view>()(Of(k));
    }
    template <class A, class B>
    bool operator()(const A& a, const B& b) const noexcept {
      return Of(a) == Of(b);
    }
  };

  explicit Impl(const FrontierOptions& o) : options(o) {}

  ~Impl() {
    for (const Host& h : hosts) {
      if (!h.spill_path.empty()) std::remove(h.spill_path.c_str());
    }
    for (const std::string& path : drained) std::remove(path.c_str());
  }

  const FrontierOptions options;
  // The one lock. A forked checkpoint writer takes it (ForEachEntry), so the
  // engine calls the frontier from worker threads only inside its checkpoint
  // gate (crawler/src/gate.h).
  mutable Mutex mu;
  // A deque: a host's record never moves (so the index's keys can be views
  // of the records' own), and no vector's spare capacity (up to as much
  // again) is held.
  std::deque<Host> hosts GUARDED_BY(mu);
  std::unordered_map<std::string_view, size_t> host_index GUARDED_BY(mu);  // Host::key
  // open, non-empty, below the limit
  std::set<std::pair<Clock::time_point, size_t>> schedule GUARDED_BY(mu);
  uint64_t in_memory GUARDED_BY(mu) = 0;  // ram + write_buf entries over all hosts
  uint64_t buffered GUARDED_BY(mu) = 0;   // write_buf entries over all hosts
  uint64_t on_disk GUARDED_BY(mu) = 0;
  uint64_t in_flight GUARDED_BY(mu) = 0;
  uint64_t admitted GUARDED_BY(mu) = 0, duplicates GUARDED_BY(mu) = 0;
  uint64_t refused_full GUARDED_BY(mu) = 0, spilled GUARDED_BY(mu) = 0;
  uint64_t next_lease GUARDED_BY(mu) = 1;
  // by lease id (= Pop order)
  std::map<uint64_t, std::pair<size_t, UrlEntry>> leased GUARDED_BY(mu);
  // Leases holding a connection of an address (by lease id: the address's
  // index), until Ended or the lease's end frees it.
  std::unordered_map<uint64_t, uint32_t> lease_ip GUARDED_BY(mu);
  std::map<uint32_t, uint64_t> depth_counts GUARDED_BY(mu);  // queued URLs by depth
  std::vector<std::string> drained GUARDED_BY(mu);           // read-back spill files
  // A deque: no vector's spare capacity (up to as much again) is held.
  std::deque<Ip> ips GUARDED_BY(mu);
  std::unordered_set<uint32_t, IpKey, IpKey> ip_index GUARDED_BY(mu){0, IpKey{&ips},
                                                                     IpKey{&ips}};
  std::vector<uint32_t> free_ips GUARDED_BY(mu);  // slots to reuse
  std::deque<uint32_t> idle_ips GUARDED_BY(mu);   // slots no host refers to
  // The latest time a caller gave (Pop, TryStartAt, EndAt, a lease's end):
  // ReclaimIps's now, on the callers' clock (a test's is not the real one).
  Clock::time_point latest GUARDED_BY(mu){};

  // The slot of `address`'s record, made if there is none.
  uint32_t IpFor(std::string_view address) REQUIRES(mu) {
    auto it = ip_index.find(address);
    if (it != ip_index.end()) return *it;
    ReclaimIps();
    uint32_t slot = static_cast<uint32_t>(ips.size());
    if (!free_ips.empty()) {
      slot = free_ips.back();
      free_ips.pop_back();
    } else {
      ips.emplace_back();
    }
    ips[slot].address = std::string(address);  // before the index hashes it
    ip_index.insert(slot);
    ListIdle(slot);  // no host refers to it yet
    return slot;
  }
  // Address `slot` may have no host left: it waits in idle_ips.
  void ListIdle(uint32_t slot) REQUIRES(mu) {
    Ip& ip = ips[slot];
    if (ip.hosts > 0 || ip.idle_listed) return;
    ip.idle_listed = true;
    idle_ips.push_back(slot);
  }
  // Looks at the first two of idle_ips (amortised: every new address and
  // every request's end calls this; "now" is `latest`): one that a host refers to again
  // leaves the list, one that is free (nothing under way or waiting there, its next start
  // due) is dropped and its slot reused, any other goes to the back. So the records of
  // addresses no host has any more are dropped soon after their last request, never while
  // their politeness binds.
  void ReclaimIps() REQUIRES(mu) {
    for (int i = 0; i < 2 && !idle_ips.empty(); ++i) {
      const uint32_t slot = idle_ips.front();
      idle_ips.pop_front();
      Ip& ip = ips[slot];
      ip.idle_listed = false;
      if (ip.hosts > 0) continue;
      if (ip.in_flight > 0 || ip.parked || ip.due > latest) {
        ip.idle_listed = true;
        idle_ips.push_back(slot);
        continue;
      }
      ip_index.erase(slot);  // while its address still hashes to its entry
      ip = Ip();
      free_ips.push_back(slot);
    }
  }
  // May a request start at address `ip` now?
  bool IpBlocked(const Ip& ip, Clock::time_point now) const {
    return ip.in_flight >= options.max_connections_per_ip || ip.due > now;
  }
  Clock::duration IpDelay() const {
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(options.min_delay_ip_s));
  }
  Clock::duration HostDelay() const {
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(options.min_delay_s));
  }
  // A request starts at `ip` now: the next waits min_delay_ip_s.
  void IpStarted(Ip& ip, Clock::time_point now) {
    ++ip.in_flight;
    ip.due = now + IpDelay();
  }
  // The start IpStarted counted at `now` was not made: its delay goes,
  // unless the address's next start moved since (that stands). The address
  // was due at `now`, so `now` is as good as its due before.
  void IpUnstarted(Ip& ip, Clock::time_point now) {
    if (ip.due == now + IpDelay()) ip.due = now;
  }
  // May host `id` start a request at its address now? Not if the address
  // is busy, or if another host is first in its line (its waker).
  bool IpHolds(size_t id, Clock::time_point now) const REQUIRES(mu) {
    const Host& h = hosts[id];
    if (h.ip == kNoIp) return false;
    const Ip& ip = ips[h.ip];
    return IpBlocked(ip, now) || (ip.waker != kNoWaker && ip.waker != id);
  }
  // A request at `ip` ended at `ended` (none: not sent): the next start
  // waits min_delay_ip_s after it too, so with one connection per address
  // the server sees every gap at least that long, whatever the lag between
  // a request's start here and its arrival there.
  void IpEnded(Ip& ip, std::optional<Clock::time_point> ended) {
    if (ip.in_flight > 0) --ip.in_flight;
    if (ended)
      ip.due = std::max(
          ip.due, *ended + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(options.min_delay_ip_s)));
  }
  // Host `id`, due, may not start at its address now: it joins the back of
  // the address's line; the line's first is scheduled for when the address
  // is due (WakeIp), so hosts take turns, first come first served.
  void HoldForIp(size_t id) REQUIRES(mu) {
    Unschedule(id);
    Host& h = hosts[id];
    h.ip_parked = true;
    Ip& ip = ips[h.ip];
    if (!ip.parked) ip.parked = std::make_unique<std::deque<uint32_t>>();
    ip.parked->push_back(static_cast<uint32_t>(id));
    WakeIp(h.ip);
  }
  // A connection of address `ip` is free, or its waker left: the first host
  // in its line that can go is scheduled for when the address is due.
  void WakeIp(uint32_t index) REQUIRES(mu) {
    if (index == kNoIp) return;
    Ip& ip = ips[index];
    while (ip.waker == kNoWaker && ip.in_flight < options.max_connections_per_ip &&
           ip.parked) {
      const uint32_t id = ip.parked->front();
      ip.parked->pop_front();
      if (ip.parked->empty()) ip.parked.reset();
      Host& h = hosts[id];
      h.ip_parked = false;
      h.due = std::max(h.due, ip.due);
      MaybeSchedule(id);
      if (h.scheduled) ip.waker = id;
    }
  }

  void CountDepth(uint32_t depth, int64_t delta) REQUIRES(mu) {
    auto it = depth_counts.try_emplace(depth, 0).first;
    it->second += static_cast<uint64_t>(delta);
    if (it->second == 0) depth_counts.erase(it);
  }

  size_t HostFor(std::string_view key, std::vector<std::string>* new_hosts) REQUIRES(mu) {
    auto it = host_index.find(key);
    if (it != host_index.end()) return it->second;
    size_t id = hosts.size();
    hosts.emplace_back();
    hosts.back().key = std::string(key);
    host_index.emplace(hosts.back().key, id);
    if (new_hosts != nullptr) new_hosts->emplace_back(key);
    return id;
  }

  void MaybeSchedule(size_t id) REQUIRES(mu) {
    Host& h = hosts[id];
    if (h.open && !h.scheduled && !h.ip_parked && h.Queued() > 0 &&
        h.in_flight < options.max_connections_per_host) {
      schedule.emplace(h.due, id);
      h.scheduled = true;
    }
  }

  void Unschedule(size_t id) REQUIRES(mu) {
    Host& h = hosts[id];
    if (h.scheduled) {
      schedule.erase({h.due, id});
      h.scheduled = false;
      if (h.ip != kNoIp && ips[h.ip].waker == id) ips[h.ip].waker = kNoWaker;
    }
  }

  // `e` joins its host's queue: at the back of its depth, or with `first`
  // at the front (a redirect's target, Admit), when it stays in RAM.
  Status Push(UrlEntry e, std::vector<std::string>* new_hosts, bool first = false)
      REQUIRES(mu) {
    size_t id = HostFor(HostKey(e.url), new_hosts);
    Host& h = hosts[id];
    CountDepth(e.depth, 1);
    if (!h.Spilling() && in_memory < options.max_memory_urls) {
      if (first) {
        h.ram.PushFront(std::move(e));
      } else {
        h.PushRam(std::move(e));
      }
    } else {
      h.disk_min_depth = std::min(h.disk_min_depth, e.depth);
      h.write_buf.push_back(std::move(e));
      ++buffered;
      ++spilled;
    }
    ++in_memory;
    MaybeSchedule(id);
    if (buffered > std::min(kMaxBufferedSpill, options.max_memory_urls / 4))
      return FlushAll();
    return Status::Ok();
  }

  Status FlushAll() REQUIRES(mu) {
    for (Host& h : hosts) {
      Status st = Flush(h);
      if (!st.ok()) return st;
    }
    return Status::Ok();
  }

  // Names the host's next spill file if it has none (a drained file is never
  // reused: the number goes up).
  Status StartFile(Host& h) REQUIRES(mu) {
    if (!h.spill_path.empty()) return Status::Ok();
    std::error_code ec;
    std::filesystem::create_directories(options.spill_dir, ec);
    if (options.spill_dir.empty() || ec) {
      return Status::Error(Status::Code::kIoError,
                           "frontier spill directory '" + options.spill_dir +
                               "' cannot be created" + (ec ? ": " + ec.message() : ""));
    }
    char name[48];
    std::snprintf(name, sizeof(name), "host-%016" PRIx64 "-%u.q",
                  XXH3_64bits(h.key.data(), h.key.size()), ++h.spill_gen);
    h.spill_path = options.spill_dir + "/" + name;
    return Status::Ok();
  }

  Status Flush(Host& h) REQUIRES(mu) {
    if (h.write_buf.empty()) return Status::Ok();
    Status st = StartFile(h);
    if (!st.ok()) return st;
    ByteWriter w;
    for (const UrlEntry& e : h.write_buf) EncodeSpillRecord(e, &w);
    std::string_view bytes = w.view();
    std::FILE* f = std::fopen(h.spill_path.c_str(), "ab");
    if (f == nullptr) return IoError(h.spill_path, "open");
    bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    ok = (std::fclose(f) == 0) && ok;
    if (!ok) return IoError(h.spill_path, "write");
    for (const UrlEntry& e : h.write_buf) ++h.file_depths[e.depth];
    h.file_bytes += bytes.size();
    h.on_disk += h.write_buf.size();
    on_disk += h.write_buf.size();
    in_memory -= h.write_buf.size();
    buffered -= h.write_buf.size();
    // Its buffer given back: at 10^6 hosts each spilled host kept a
    // buffer of one entry or more, 86 MB over the crawl.
    std::vector<UrlEntry>().swap(h.write_buf);
    return Status::Ok();
  }

  // Moves up to one chunk from the host's file into its RAM queue.
  Status Refill(Host& h) REQUIRES(mu) {
    if (h.on_disk == 0) {
      // Everything spilled is still buffered: it is the FIFO order's next part.
      for (UrlEntry& e : h.write_buf) h.PushRam(std::move(e));
      buffered -= h.write_buf.size();
      std::vector<UrlEntry>().swap(h.write_buf);
      h.disk_min_depth = UINT32_MAX;
      return Status::Ok();
    }
    uint64_t room =
        options.max_memory_urls > in_memory ? options.max_memory_urls - in_memory : 0;
    uint64_t want = std::clamp<uint64_t>(room, 1, options.spill_chunk);
    std::FILE* f = std::fopen(h.spill_path.c_str(), "rb");
    if (f == nullptr) return IoError(h.spill_path, "open");
    if (std::fseek(f, static_cast<long>(h.read_offset), SEEK_SET) != 0) {
      std::fclose(f);
      return IoError(h.spill_path, "seek");
    }
    uint64_t got = 0;
    while (got < want && got < h.on_disk) {
      UrlEntry e;
      uint64_t bytes = 0;
      if (!ReadSpillRecord(f, &e, &bytes)) break;
      h.read_offset += bytes;
      if (auto d = h.file_depths.find(e.depth);
          d != h.file_depths.end() && --d->second == 0)
        h.file_depths.erase(d);
      h.PushRam(std::move(e));
      ++got;
    }
    std::fclose(f);
    if (got == 0) {
      return Status::Error(
          Status::Code::kCorruption,
          h.spill_path + ": spill file ends early (" + std::to_string(h.on_disk) +
              " records expected at offset " + std::to_string(h.read_offset) + ")");
    }
    h.on_disk -= got;
    on_disk -= got;
    in_memory += got;
    if (h.on_disk == 0) {
      DrainedFile(h);
      if (h.write_buf.empty()) h.disk_min_depth = UINT32_MAX;
    }
    return Status::Ok();
  }

  // The host's file is done with (read back or dropped): the next spill
  // starts a new one. This one is removed later (RemoveDrained), never while
  // a checkpoint writer may read it.
  void DrainedFile(Host& h) REQUIRES(mu) {
    drained.push_back(h.spill_path);
    h.spill_path.clear();
    h.read_offset = 0;
    h.file_bytes = 0;
    h.file_depths.clear();
  }

  // Lease `id`'s connection at its address (the one it started at, wherever
  // its host has moved since) is free, if it still held one.
  void FreeAddress(uint64_t id, std::optional<Clock::time_point> ended) REQUIRES(mu) {
    auto it = lease_ip.find(id);
    if (it == lease_ip.end()) return;
    const uint32_t ip = it->second;
    lease_ip.erase(it);
    IpEnded(ips[ip], ended);
    WakeIp(ip);
    if (ended) latest = std::max(latest, *ended);
    ReclaimIps();
  }

  // Frees the lease's connection slot; returns its host, or nullopt for a
  // lease this frontier did not hand out (ignored). REQUIRES: mu held.
  // `ended`: when its request ended (its address's next start waits
  // min_delay_ip_s after it); none: it was not fetched.
  std::optional<size_t> EndLease(const Lease& lease,
                                 std::optional<Clock::time_point> ended = std::nullopt)
      REQUIRES(mu) {
    auto it = leased.find(lease.id);
    if (it == leased.end()) return std::nullopt;
    size_t id = it->second.first;
    leased.erase(it);
    --hosts[id].in_flight;
    --in_flight;
    FreeAddress(lease.id, ended);
    return id;
  }

  double UsualDelay(const Host& h, double response_s) const {
    return std::max({options.min_delay_s,
                     std::min(h.crawl_delay_s, options.max_crawl_delay_s),
                     options.response_factor * response_s});
  }
  double DelayAfterFetch(const Host& h, double response_s) const {
    return h.backoff.Wait(UsualDelay(h, response_s), options);
  }

  // The host's back-off takes `signal`; then the host waits its delay after
  // the fetch that ended at `now`.
  void AfterFetch(Host& h, Clock::time_point now, double response_s, HostSignal signal) {
    h.backoff.On(signal, UsualDelay(h, response_s), options);
    const double wait = DelayAfterFetch(h, response_s);
    h.cycle_s = static_cast<float>(response_s + wait);
    h.due = std::max(h.due, now + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(wait)));
  }

  // The host to serve next (FrontierOptions::most_work_first): of the
  // first kPickWindow due hosts in the schedule, the one with the least
  // (due - now) - min(Queued() x cycle_s, kMaxWorkS), the earliest due on
  // a tie; with
  // most_work_first off, the earliest due. A host that waits gains on the
  // others as they are served, so none waits for ever; the window keeps a
  // pick O(1) with thousands of hosts due (frontier_bench, 1,000 hosts all
  // due: drain 304-313k URLs/s before, 260-262k with it, ~0.6 us a pick,
  // against ~0.5 ms of CPU a fetch). Requires the schedule's first host due
  // by `now`.
  static constexpr int kPickWindow = 64;
  // The most a host's queue weighs in the pick: a host due and in the
  // window is served once it has waited kMaxWorkS longer than any other
  // there, however much they hold. Unbounded, a host with 10^4 URLs queued
  // at 0.1 s a request outranked a small one by 1,000 s: with connections
  // the limit, 50 small hosts got their first page only as the big one
  // drained (frontier_test "Fair between hosts*": the last at 59.1 s; now
  // 10.3 s, the big host holding all 16 connections until then).
  static constexpr double kMaxWorkS = 10;
  size_t PickDue(Clock::time_point now) const REQUIRES(mu) {
    size_t best = schedule.begin()->second;
    if (!options.most_work_first) return best;
    double best_key = 0;
    int seen = 0;
    for (auto it = schedule.begin();
         it != schedule.end() && it->first <= now && seen < kPickWindow; ++it, ++seen) {
      const Host& h = hosts[it->second];
      const double key = std::chrono::duration<double>(it->first - now).count() -
                         std::min(static_cast<double>(h.Queued()) * h.cycle_s, kMaxWorkS);
      if (seen == 0 || key < best_key) {
        best = it->second;
        best_key = key;
      }
    }
    return best;
  }
};

}  // namespace crawler::frontier

#endif  // FRONTIER_FRONTIER_IMPL_H_
