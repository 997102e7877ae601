// Room engine/ (docs/architecture.md): the parts a page passes through on
// one machine. Config and seeds, the fetcher (crawler/fetcher.h, libcurl
// multi), scope, the retry rules (retry.h: one verdict per result), the
// checkpoint gate, the host table (robots.txt state, page cap), the
// counters, and this file's workers, which run the pipeline. Includes
// output/ only; a multi-machine job only through placement.h.
//
// A crawl worker: one thread with its own libcurl multi Fetcher, and the
// pipeline every fetched result goes through:
//
//   frontier.Pop ─► host table (robots, page cap) ─► fetch
//   result ─► WARC + fetch log ─► links (gumbo) ─► depth, scope ─► dedup + frontier
//
// Results wait in one ResultQueue that any worker drains, so parsing spreads
// over the cores even when one worker holds most transfers (one big host).
// The costly part of a result (WARC digests + gzip, link extraction) runs
// outside the checkpoint gate; everything that touches the filter, the
// frontier or the host table runs inside it (gate.h's rule: each such step
// takes a Gate::Pass).
//
// Every admitted URL ends in exactly one fetch-log line: fetched (with its
// status or error) or skipped with the reason (robots, max_pages_per_host).
// Redirects are not followed inside libcurl: a Location goes through scope
// and dedup like a link, at most fetch.max_redirects hops per chain.
#ifndef CRAWLER_WORKER_H_
#define CRAWLER_WORKER_H_

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "browser/pool.h"
#include "crawler/config.h"
#include "crawler/fetcher.h"
#include "crawler/resolver.h"
#include "crawler/warc.h"
#include "dedup/filter.h"
#include "engine/counters.h"
#include "engine/gate.h"
#include "engine/host_table.h"
#include "engine/placement.h"
#include "engine/recrawl.h"
#include "engine/render_choice.h"
#include "engine/retry.h"
#include "engine/revisits.h"
#include "engine/scope.h"
#include "frontier/frontier.h"
#include "output/fetch_log.h"
#include "output/history.h"
#include "output/seen_log.h"
#include "parsers/links.h"

namespace crawler::engine {

// When the crawl is over, and why. Thread-safe.
class RunState {
 public:
  // Work begun and not finished: leases popped and robots.txt fetches
  // started, until their results (and the links they yield) are admitted.
  // The crawl is over when this is 0 and the frontier is empty.
  std::atomic<uint64_t> busy{0};
  std::atomic<uint64_t> started{0};  // page fetches started (crawl.max_pages)
  // Pages in the browser pool ([browser] render): a stop's drain waits for
  // them (each is busy too, until it comes back and is processed).
  std::atomic<uint64_t> rendering{0};
  // Heap bytes of the robots.txt fetches waiting for room in the workers'
  // fetchers (Worker::robots_waiting_): the stats report's "robots_queue".
  std::atomic<uint64_t> robots_waiting_bytes{0};
  std::atomic<bool> max_pages_hit{false};
  // [recrawl] adapt = "change-rate": the price of freshness the Run thread
  // tunes (engine/recrawl.h, NextMu).
  std::atomic<double> recrawl_mu{0};
  // [recrawl] in a cluster: a shard's URL history arriving (the import
  // through ShardsLoaded) and records of shards given up being erased, one
  // at a time (revisits.h).
  Mutex shards_moving;
  // A cluster node: shards dropped here so far (given away, Worker::HandOff).
  // Each worker then drops its robots.txt fetches of them not started yet.
  std::atomic<uint64_t> shard_drops{0};

  // The first error stops the crawl; later ones are dropped.
  void Fail(const Status& st) EXCLUDES(mu_);
  bool failed() const { return failed_.load(); }
  Status error() const EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return first_error_;
  }

 private:
  std::atomic<bool> failed_{false};
  mutable Mutex mu_;
  Status first_error_ GUARDED_BY(mu_);
};

// A finished fetch waiting to be processed.
struct Completed {
  bool robots = false;
  std::string host;       // robots: the host the robots.txt is for
  int hops = 0;           // robots: redirects followed so far
  frontier::Lease lease;  // pages
  FetchResult result;
  // [recrawl]: the page's history record when its fetch started (none: its
  // first fetch, or recrawl off).
  std::optional<output::HistoryRecord> before;
  // robots: the address it was counted at (Frontier::TryStartAt), if any;
  // ended there when the fetch ends (ConnectionsFreed).
  std::string started_at = {};
  // A multi-machine job's turn at its address (robots: started_at; pages:
  // lease.address), given back when the fetch ends; 0: none taken.
  uint64_t turn = 0;
  // [browser] render: sent to the browser pool once (worker_render.cc); back
  // with the page as rendered, or why not.
  bool render_sent = false;
  std::shared_ptr<const browser::RenderResult> rendered = {};
  std::string render_error = {};
};

class ResultQueue {
 public:
  void Push(std::vector<Completed>* batch) EXCLUDES(mu_);
  std::optional<Completed> TryPop() EXCLUDES(mu_);
  bool Empty() const EXCLUDES(mu_);
  size_t Size() const EXCLUDES(mu_);
  // Waits until a result is queued or `deadline`.
  void WaitUntil(frontier::Clock::time_point deadline) EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  std::condition_variable_any cv_;
  std::deque<Completed> queue_ GUARDED_BY(mu_);
};

// What a worker uses; all owned by the crawl and outliving the workers.
struct WorkerParts {
  const Config& config;
  const Scope& scope;
  dedup::Filter& filter;
  frontier::Frontier& frontier;
  HostTable& hosts;
  output::FetchLog& log;
  output::WarcWriter& warc;
  Counters& counters;
  Gate& gate;
  ResultQueue& results;
  RunState& state;
  Placement* placement;      // null: a single-machine crawl (placement.h)
  output::SeenLog* seen;     // a cluster node's with shared_dir; else null
  output::History* history;  // [recrawl] or dedup.payload on (revisits.h); else null
  // Where bodies past fetch.spool_body_bytes wait (OUT/spool; "": in RAM).
  std::string spool_dir = {};
  Resolver* resolver = nullptr;      // the crawler's DNS; null: libcurl resolves
  browser::Pool* browser = nullptr;  // [browser] render on; null: off
};

// [browser]'s pool for a crawl into `out` (profiles and log in OUT/browser/).
browser::PoolOptions BrowserPoolOptions(const Config& config, const std::string& out);

class Worker {
 public:
  Worker(const WorkerParts& parts, std::unique_ptr<Fetcher> fetcher, size_t max_running)
      : p_(parts),
        revisits_({parts.config, parts.config.recrawl.enabled ? parts.history : nullptr,
                   parts.config.dedup_payload ? parts.history : nullptr, parts.counters,
                   parts.state.recrawl_mu, parts.state.shards_moving, parts.placement}),
        fetcher_(std::move(fetcher)),
        max_running_(max_running) {
    CompileRenderRules();
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // crawl.workers workers (0: one per core, at most crawl.max_connections),
  // each with its share of crawl.max_connections. Errors: *error.
  static std::vector<std::unique_ptr<Worker>> MakeAll(const Config& config,
                                                      const WorkerParts& parts,
                                                      Status* error);

  // Runs until the crawl is over, `stop_now` is set or the crawl failed.
  // Once `drain` is set (a stop: Ctrl-C, SIGTERM, max_duration_s) no new
  // request starts and nothing arrives from other nodes; the transfers in
  // flight finish and every result is processed, then it returns. The
  // caller sets `stop_now` when the grace ends (checkpoint.stop_grace_s)
  // or on a second signal: what is still in flight then goes into the
  // checkpoint as in flight.
  void Loop(const std::atomic<bool>& drain, const std::atomic<bool>& stop_now);
  // Seeds (and every URL found): depth, scope, dedup, frontier; robots.txt
  // fetches for new hosts.
  [[nodiscard]] Status Admit(const Gate::Pass& pass,
                             std::vector<frontier::UrlEntry> entries);
  void StartRobots(const Gate::Pass& pass, const std::string& host,
                   const std::string& url, int hops);
  // Hands waiting robots.txt fetches to the fetcher while it has room.
  void AddWaitingRobots(const Gate::Pass& pass);
  // Shards taken over (placement.h): their hosts, queued URLs and seen set
  // into this node's frontier, host table and filter; their URL history into
  // this node's ([recrawl]).
  [[nodiscard]] Status RestoreShards(const Gate::Pass& pass, ShardState s);
  // Shards handed over to another node (placement.h, HandoffWork): drops what
  // was given up (and its URL history), reports the drained.
  [[nodiscard]] Status HandOff(const Gate::Pass& pass);

 private:
  struct Prepared {
    output::PreparedExchange warc;
    parsers::ExtractResult links;
    // A sitemap's entries, resolved against its URL (sitemap.h).
    struct SitemapUrls {
      bool index = false;
      std::vector<std::string> urls;
      std::vector<std::string> problems;  // warnings, unresolvable <loc>s
    };
    std::optional<SitemapUrls> sitemap;
    Revisits::Classified visit;                  // what the history counts (revisits.h)
    std::chrono::system_clock::time_point date;  // the records' WARC-Date
    // A rendered page: the browser's responses, to be archived with it
    // (worker_render.cc), each under its normalized URL.
    struct Resource {
      std::string url;
      output::PreparedExchange warc;
    };
    std::vector<Resource> resources;
  };
  Prepared Prepare(const Completed& c) const;
  // [browser] render (worker_render.cc): whether a finished page goes to
  // the browser; sending it; its rendered links and responses into p;
  // archiving those responses the crawl does not hold yet.
  void CompileRenderRules();
  bool WantsRender(const Completed& c) const;
  // "auto": whether a page WantsRender allows goes, by its static parse.
  bool AutoRenders(const Completed& c, const parsers::ScriptSignals& s) const;
  // Sends `c` to the browser if it goes: "always" before its static parse
  // (`prepared` null), "auto" after it, by its signals. True: sent.
  bool ToBrowser(Completed& c, const Prepared* prepared);
  void SendToBrowser(Completed c);
  void PrepareRendered(const Completed& c, Prepared& p) const;
  [[nodiscard]] Status StoreResources(const Gate::Pass& pass, const Prepared& p,
                                      uint32_t* stored);
  Prepared::SitemapUrls ReadSitemap(const FetchResult& r, const std::string& url) const;
  Result<std::optional<frontier::Clock::time_point>> StartFetches(const Gate::Pass& pass);
  bool StartPage(const Gate::Pass& pass, frontier::Lease lease,
                 std::optional<output::HistoryRecord> before, uint64_t turn);
  // Starts `lease` (StartPage) once a multi-machine job's turn at its
  // address is at hand (placement.h, AddressTurns). While the turn is
  // asked for, the lease waits in turn_waiting_; told to wait, it goes back
  // to the frontier and the address is held until then. False once
  // crawl.max_pages fetches have started.
  bool StartWithTurn(const Gate::Pass& pass, frontier::Lease lease,
                     std::optional<output::HistoryRecord> before);
  // Every lease waiting for its turn back to the frontier, unfetched (a
  // stop, or crawl.max_pages reached).
  void ReturnWaiting(const Gate::Pass& pass);
  // `counter` null: counted by Counters::Guarded, as `why`.
  [[nodiscard]] Status Skip(const frontier::Lease& lease, const char* why,
                            uint64_t CrawlSummary::*counter);
  // A URL a trap guard or a domain budget kept out: counted by `reason`,
  // logged once per host and reason (worker_admit.cc).
  void Guarded(const std::string& url, const char* reason);
  // Admit's budgets: drops the entries their domains' URL budgets refuse;
  // returns the others' domains, in their new order ("" for a revisit).
  std::vector<std::string> ApplyBudgets(const Gate::Pass& pass,
                                        std::vector<frontier::UrlEntry>* entries);
  // Erases `url` from the filter (given up, or over max_pages_per_host), so
  // that a later link admits it again; counted as forgotten, or as
  // cannot_forget by a filter that cannot erase (bloom, allow_erase off).
  void Forget(const Gate::Pass& pass, const std::string& url);
  [[nodiscard]] Status ProcessOne();
  [[nodiscard]] Status FinishRobots(const Gate::Pass& pass, const Completed& c,
                                    const Prepared& p);
  // The sitemaps robots.txt of `host` named (and /sitemap.xml with
  // crawl.sitemaps = "robots+default"), admitted like links.
  [[nodiscard]] Status OfferSitemaps(const Gate::Pass& pass, const std::string& host,
                                     const std::vector<std::string>& named);
  // Logs that `host` is parked after `r` (no answer park_after times in a row).
  void LogIfParked(const std::string& host, const FetchResult& r);
  // fetch.max_retries, retry_base_s, retry_max_s, dns_retry_s.
  RetryPolicy Policy() const {
    return {.max_retries = p_.config.fetch.max_retries,
            .base_s = p_.config.fetch.retry_base_s,
            .max_s = p_.config.fetch.retry_max_s,
            .dns_retry_s = p_.config.fetch.dns_retry_s};
  }
  [[nodiscard]] Status FinishPage(const Gate::Pass& pass, const Completed& c,
                                  const Prepared& p);
  [[nodiscard]] Status OfferLinks(const Gate::Pass& pass, const frontier::UrlEntry& e,
                                  const FetchResult& r, const Prepared& p);
  [[nodiscard]] Status RobotsFailed(const Gate::Pass& pass, const Completed& c,
                                    const Prepared& p);
  // `robots_attempt`: robots.txt's (page == null) attempt number.
  [[nodiscard]] Status Record(const FetchResult& r, const Prepared& p,
                              const frontier::UrlEntry* page, bool final = true,
                              uint32_t robots_attempt = 1, std::string_view render = {},
                              uint32_t resources = 0);
  bool Finished(const Gate::Pass& pass) const;
  // completed_'s requests are over: their addresses' connections are free.
  void ConnectionsFreed(const Gate::Pass& pass) const;
  // robots.txt fetches that failed transiently, started again when due.
  void StartDueRobots(const Gate::Pass& pass);

  WorkerParts p_;
  Revisits revisits_;  // [recrawl]: the URL history's side of each fetch
  std::unique_ptr<Fetcher> fetcher_;
  const size_t max_running_;
  std::vector<std::regex> render_include_, render_exclude_;  // browser.include/exclude
  // browser.render = "auto": what rendering gave per host, shared by the
  // workers (null otherwise).
  std::shared_ptr<RenderLearning> render_learning_;
  std::vector<Completed> completed_;  // filled by fetcher callbacks, this thread only
  struct RobotsRetry {
    frontier::Clock::time_point at;
    std::string host, url;
    int hops = 0;
  };
  std::vector<RobotsRetry> robots_retry_;  // this thread only
  // A later try of a robots.txt fetch (robots_retry_), after `delay`.
  void RobotsLater(RobotsRetry r, frontier::Clock::duration delay);
  // robots.txt fetches started, waiting for room in the fetcher (`at`
  // unused); this thread only, or before the workers run (the seeds).
  std::deque<RobotsRetry> robots_waiting_;
  // Leases popped whose turn at their address is being asked for (no
  // worker waits on Redis): tried again each round, every ms or so.
  struct TurnWait {
    frontier::Lease lease;
    std::optional<output::HistoryRecord> before;
  };
  std::deque<TurnWait> turn_waiting_;
  void WaitForRoom(RobotsRetry r);  // to the back of robots_waiting_, counted
  RobotsRetry NextWaiting();        // off its front, uncounted
  // A cluster node: may a robots.txt fetch of `host` not in flight start
  // now? kWait: its shard's lease lapsed, or the shard is being handed over
  // (the fetch goes with it: its new owner starts it again); kDrop: the
  // shard was given away (ended here: its new owner has it).
  enum class RobotsGo { kStart, kWait, kDrop };
  RobotsGo MayStartRobots(const std::string& host) const;
  // A fetch that may not start now: back in robots_retry_ for later (kWait)
  // or ended, uncounted (kDrop). False: it may start.
  bool Held(RobotsRetry& r);
  // After a drop (RunState::shard_drops moved), this worker's robots.txt
  // fetches of shards given away go at once, not when due: a shard taken
  // back before then is restored from a checkpoint, which starts them again.
  void DropGivenAwayRobots();
  uint64_t drops_seen_ = 0;  // this thread only
  // A cluster node: transfers of hosts whose shard lease lapsed are
  // abandoned (checked every 50 ms; placement.h, Lapsed).
  void AbandonLapsed();
  [[nodiscard]] Status Abandoned(const Completed& c);
  frontier::Clock::time_point next_lapse_check_{};
};

}  // namespace crawler::engine

#endif  // CRAWLER_WORKER_H_
