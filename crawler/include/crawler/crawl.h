// One crawl: seeds -> normalize -> scope -> dedup -> frontier -> fetch ->
// WARC + fetch log -> links -> scope -> dedup -> frontier ...
//
// `crawl.workers` threads (default: one per core) each drive their own libcurl
// multi Fetcher (max_connections split between them) and process what any of
// them fetched (crawler/src/worker.h). Per host, robots.txt is fetched first
// (RFC 9309) and the host's URLs are handed out only after it; the engine's
// per-host state is crawler/src/host_table.h, the scope check (seeds, links,
// redirect targets alike) crawler/src/scope.h. Every admitted URL ends in
// exactly one fetch-log line (crawler/src/fetch_log.h). Output:
//   OUT/warc/crawl-NNNNN.warc.gz   OUT/fetch-log.jsonl   OUT/frontier/ (spill)
//   OUT/stats.json + OUT/stats-series.jsonl (crawler/src/stats_writer.h)
//   OUT/checkpoint/ + OUT/checkpoint.prev/ (crawler/src/checkpointer.h)
//
// A failed write of any output (fetch log, WARC, stats, checkpoint) stops
// the crawl: Run returns it (the CLI exits 1) and the last good checkpoint
// stays resumable. OUT/.lock (flock) keeps a second crawler, or a resume
// racing a dying checkpoint child, out of OUT.
#ifndef CRAWLER_CRAWL_H_
#define CRAWLER_CRAWL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "crawler/config.h"
#include "frontier/frontier.h"

namespace crawler::engine {

// The crawl's counts, as checkpointed (MANIFEST.json "counters") and
// reported (stats.json "crawl"); their JSON schema is crawler/src/stats_schema.h.
struct CrawlCounts {
  uint64_t fetched = 0;  // responses received (any status)
  uint64_t failed = 0;   // no response: timeouts, refused, broken
  uint64_t truncated = 0;
  uint64_t status_2xx = 0, status_3xx = 0, status_4xx = 0, status_5xx = 0;
  uint64_t robots_blocked = 0;
  uint64_t out_of_scope = 0;  // links and redirect targets left out
  uint64_t too_deep = 0;
  uint64_t trap_guard = 0;          // max_pages_per_host reached
  uint64_t duplicates = 0;          // links the dedup filter had seen
  uint64_t filter_full = 0;         // links refused: a fixed-size filter was full
  uint64_t too_many_redirects = 0;  // redirect targets past fetch.max_redirects
  uint64_t bytes = 0;               // body bytes received
  uint64_t bytes_2xx = 0, bytes_3xx = 0, bytes_4xx = 0, bytes_5xx = 0;  // of those
  uint64_t spilled = 0;  // URLs the frontier wrote to disk (memory bound)
  uint64_t retries = 0;  // failed attempts fetched again (fetch.max_retries)
  uint64_t gave_up = 0;  // URLs whose last allowed attempt failed transiently too
  std::map<std::string, uint64_t> errors;  // by FetchErrorName: failures and truncations
};

struct CrawlSummary : CrawlCounts {
  double seconds = 0;
  bool stopped = false;  // ended by the stop flag or max_pages
  std::string warc_dir, fetch_log;
};

// Dedup figures a filter counts per process, carried across resumes in the
// checkpoint's manifest so the report covers the whole crawl.
struct DedupCarried {
  double expected_false_seen = 0;  // URLs wrongly called "seen" (expected)
  uint64_t compactions = 0;        // stripe rebuilds
  double compaction_s = 0;         // their time
};

// A live view for the status line and the log (cheap: O(stripes + hosts)).
struct CrawlProgress {
  CrawlSummary summary;
  frontier::FrontierStats frontier;
  uint64_t dedup_items = 0;
  double dedup_fpr = 0;
  uint64_t dedup_bytes = 0;
  std::string cluster;  // a cluster node's exchange, one phrase (else empty)
};

class Crawl {
 public:
  // `seeds`: normalized URLs. Creates OUT (and its files). Seeds out of
  // scope are left out, each named with the reason in *skipped (if given).
  static Result<std::unique_ptr<Crawl>> Create(
      const Config& config, const std::vector<std::string>& seeds,
      const std::string& out_dir, std::vector<std::string>* skipped = nullptr);
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
  // checkpoint. Errors name the file and the problem (kIoError: the disk
  // failed; any other code: bad input, a damaged or missing checkpoint);
  // nothing is changed in OUT unless the checkpoint loaded completely.
  static Result<std::unique_ptr<Crawl>> Resume(const std::string& out_dir,
                                               const std::vector<std::string>& overrides,
                                               std::string* warning);
  static const std::vector<std::string>& ResumableKeys();
  CrawlProgress Progress() const;
  // "http://HOST:PORT/metrics" when [metrics] listen is set, else "".
  std::string MetricsUrl() const;
  // A cluster node: after Run, give the shards' leases up (a graceful leave:
  // with cluster.shared_dir the other nodes take them over at once).
  void LeaveOnStop();

  struct Impl;  // the parts (crawler/src/crawl_impl.h)

 private:
  explicit Crawl(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace crawler::engine

#endif  // CRAWLER_CRAWL_H_
