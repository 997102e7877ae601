// One crawl: seeds -> normalize -> scope -> dedup -> frontier -> fetch ->
// WARC + fetch log -> links -> scope -> dedup -> frontier ...
//
// `crawl.workers` threads (default: one per core) each drive their own libcurl
// multi Fetcher (max_connections split between them) and parse what they
// fetched, so parsing, the crawl's main cost, runs on every core. They share
// the frontier, the dedup filter, the WARC writer and the fetch log, each
// thread-safe. Per host, robots.txt
// is fetched first (RFC 9309 outcomes via parsers::Robots::ForFetch) and the
// host's URLs are handed out only after it. Redirects are not followed inside
// libcurl: each Location is resolved and goes through scope and dedup like a
// link, and the hop is logged. Every URL the crawl admits ends in exactly one
// fetch-log line: fetched (with its status or error), or skipped with the
// reason (robots, max_pages_per_host). Output:
//   OUT/warc/crawl-NNNNN.warc.gz   OUT/fetch-log.jsonl   OUT/frontier/ (spill)
//
// A redirect chain is followed for at most fetch.max_redirects hops (each hop
// is a URL of its own, deduplicated like any other). Cached robots.txt rules
// are refetched after fetch.robots_cache_s; the old rules hold meanwhile.
//
// Checkpoints (crawler/checkpoint.h) are a consistent cut: workers do their
// work in units (start fetches; process one result: WARC, fetch log, links,
// admit) that pass a gate. To cut, the Run thread closes the gate (waits for
// the units under way, a few ms at most), flushes the fetch log and the WARC,
// records their lengths, builds the stats, and fork()s: the child writes the
// checkpoint from its copy-on-write image of the filter, the frontier and the
// host table, while the parent reopens the gate at once and keeps crawling.
// The pause the workers see is the gate-closed time (logged, and reported in
// stats.json). URLs in flight are in the frontier's lease table, so they are
// saved and fetched again after a resume. Triggers: checkpoint.interval_s,
// checkpoint.interval_pages, *checkpoint_request (SIGUSR1), and the end of
// Run (stop, max_pages or done: written in-process after the workers end).
//
// OUT/stats.json is rewritten (tmp + rename) every 2 s and at the end;
// OUT/stats-series.jsonl gets one line per refresh (for the charts).
// OUT/.lock (flock) keeps a second crawler, or a resume racing a dying
// checkpoint child, out of OUT.
#ifndef CRAWLER_CRAWL_H_
#define CRAWLER_CRAWL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "crawler/config.h"
#include "dedup/status.h"
#include "frontier/frontier.h"

namespace crawler::engine {

struct CrawlSummary {
  uint64_t fetched = 0;          // responses received (any status)
  uint64_t failed = 0;           // no response: timeouts, refused, broken
  uint64_t truncated = 0;
  uint64_t status_2xx = 0, status_3xx = 0, status_4xx = 0, status_5xx = 0;
  uint64_t robots_blocked = 0;
  uint64_t out_of_scope = 0;     // links and redirect targets left out
  uint64_t too_deep = 0;
  uint64_t trap_guard = 0;       // max_pages_per_host reached
  uint64_t duplicates = 0;       // links the dedup filter had seen
  uint64_t too_many_redirects = 0;  // redirect targets past fetch.max_redirects
  uint64_t bytes = 0;            // body bytes received
  uint64_t spilled = 0;          // URLs the frontier wrote to disk (memory bound)
  std::map<std::string, uint64_t> errors;  // by FetchErrorName: failures and truncations
  double seconds = 0;
  bool stopped = false;          // ended by the stop flag or max_pages
  std::string warc_dir, fetch_log;
};

// A live view for the status line and the log (cheap: O(stripes + hosts)).
struct CrawlProgress {
  CrawlSummary summary;
  frontier::FrontierStats frontier;
  uint64_t dedup_items = 0;
  double dedup_fpr = 0;
  uint64_t dedup_bytes = 0;
};

class Crawl {
 public:
  // `seeds`: normalized URLs. Creates OUT (and its files).
  static Result<std::unique_ptr<Crawl>> Create(const Config& config,
                                               const std::vector<std::string>& seeds,
                                               const std::string& out_dir);
  ~Crawl();
  Crawl(const Crawl&) = delete;
  Crawl& operator=(const Crawl&) = delete;

  // Runs until the frontier is empty, max_pages is reached or *stop is set
  // (in-flight transfers are then abandoned). Errors: output I/O failures.
  // `progress`, if set, is called about once a second from the calling thread.
  using ProgressFn = std::function<void(const CrawlProgress&)>;
  Result<CrawlSummary> Run(const std::atomic<bool>& stop, const ProgressFn& progress = {},
                           std::atomic<bool>* checkpoint_request = nullptr);

  // Resumes the crawl in OUT from OUT/checkpoint/ (or, if that is damaged,
  // OUT/checkpoint.prev/, with *warning set). The config is the checkpoint's;
  // `overrides` may only change limits (ResumableKeys). Truncates the fetch
  // log, the WARC files and the stats series to their lengths at the
  // checkpoint. Errors (the caller exits 2) name the file and the problem;
  // nothing is changed in OUT unless the checkpoint loaded completely.
  static Result<std::unique_ptr<Crawl>> Resume(const std::string& out_dir,
                                               const std::vector<std::string>& overrides,
                                               std::string* warning);
  static const std::vector<std::string>& ResumableKeys();
  CrawlProgress Progress() const;

  struct Impl;  // opaque (public so the .cc's helpers can build one)

 private:
  explicit Crawl(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace crawler::engine

#endif  // CRAWLER_CRAWL_H_
