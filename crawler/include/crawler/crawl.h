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
#include "crawler/crawl_counts.h"
#include "frontier/frontier.h"

namespace crawler::crawl {

struct NodeJoiner;  // crawler/src/crawl/node.h

class Crawl {
 public:
  // `seeds`: normalized URLs. Creates OUT (and its files). Seeds out of
  // scope are left out, each named with the reason in *skipped (if given).
  // `joiner`: how a config with cluster.redis set joins its job (the
  // cluster's, cluster/entry.h); without one such a config is refused.
  static Result<std::unique_ptr<Crawl>> Create(
      const engine::Config& config, const std::vector<std::string>& seeds,
      const std::string& out_dir, std::vector<std::string>* skipped = nullptr,
      const NodeJoiner* joiner = nullptr);
  ~Crawl();
  Crawl(const Crawl&) = delete;
  Crawl& operator=(const Crawl&) = delete;

  // Runs until the frontier is empty, max_pages is reached or `stop` is
  // set. A stop (and crawl.max_duration_s) starts no new request and lets
  // the transfers in flight finish and be parsed, for at most
  // checkpoint.stop_grace_s, or until `stop_now` is set (a second signal);
  // the transfers still in flight then go into the last checkpoint as in
  // flight (asked again after --resume). Errors: output I/O failures.
  // `progress`, if set, is called about once a second from the calling thread.
  using ProgressFn = std::function<void(const engine::CrawlProgress&)>;
  Result<engine::CrawlSummary> Run(const std::atomic<bool>& stop,
                                   const ProgressFn& progress = {},
                                   std::atomic<bool>* checkpoint_request = nullptr,
                                   const std::atomic<bool>* stop_now = nullptr);

  // Resumes the crawl in OUT from OUT/checkpoint/ (or, if that is damaged,
  // OUT/checkpoint.prev/, with *warning set). The config is the checkpoint's;
  // `overrides` may only change limits (ResumableKeys). Truncates the fetch
  // log, the WARC files and the stats series to their lengths at the
  // checkpoint. Errors name the file and the problem (kIoError: the disk
  // failed; any other code: bad input, a damaged or missing checkpoint);
  // nothing is changed in OUT unless the checkpoint loaded completely.
  // Is `out_dir` a crawl's output, one Resume would try: a checkpoint/ or
  // checkpoint.prev/ there, or the start-config.toml of a crawl killed
  // before its first checkpoint.
  static bool IsOutputDir(const std::string& out_dir);
  static Result<std::unique_ptr<Crawl>> Resume(const std::string& out_dir,
                                               const std::vector<std::string>& overrides,
                                               std::string* warning,
                                               const NodeJoiner* joiner = nullptr);
  static const std::vector<std::string>& ResumableKeys();
  engine::CrawlProgress Progress() const;
  // "http://HOST:PORT/metrics" when [metrics] listen is set, else "".
  std::string MetricsUrl() const;
  // A cluster node whose Run failed because other nodes took its shards
  // over while it was paused or cut off from Redis (fenced): they redo its
  // work since its last committed checkpoint, from that checkpoint.
  bool Fenced() const;
  // So, after such a Run and once the Crawl is destroyed: cuts OUT's
  // outputs (fetch log, WARC files, seen log) back to that checkpoint, as
  // --resume would, so that no page is in two nodes' outputs. Returns its
  // sequence. Errors: as Resume's (no checkpoint, Redis unreachable).
  static Result<uint64_t> CutBackToCommitted(const std::string& out_dir,
                                             const NodeJoiner* joiner);
  // A cluster node: after Run, give the shards' leases up (a graceful leave:
  // with cluster.shared_dir the other nodes take them over at once).
  void LeaveOnStop();

  struct Impl;  // the parts (crawler/src/crawl_impl.h)

 private:
  explicit Crawl(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace crawler::crawl

#endif  // CRAWLER_CRAWL_H_
