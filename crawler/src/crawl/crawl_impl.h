// Room crawl/ (docs/architecture.md): the assembly at the top. Crawl::Impl
// holds one crawl's parts; crawl.cc builds and runs them (Create, Run) and
// resume.cc rebuilds them from a checkpoint. Only cli/ sits above it.
//
// The parts of one crawl (shared by crawl.cc, which runs it, and resume.cc,
// which rebuilds it from a checkpoint). Each part takes only the others it
// uses (see their headers); nothing below is passed around whole.
#ifndef CRAWLER_CRAWL_IMPL_H_
#define CRAWLER_CRAWL_IMPL_H_

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "browser/pool.h"
#include "checkpoint/checkpointer.h"
#include "crawl/node.h"
#include "crawler/crawl.h"
#include "crawler/resolver.h"
#include "engine/counters.h"
#include "engine/gate.h"
#include "engine/host_table.h"
#include "engine/scope.h"
#include "engine/worker.h"
#include "output/fetch_log.h"
#include "output/history.h"
#include "report/metrics.h"
#include "report/stats_writer.h"

namespace crawler::crawl {

struct Crawl::Impl {
  Impl(const engine::Config& c, std::string out_dir, int lock)
      : config(c),
        out(std::move(out_dir)),
        lock_fd(lock),
        hosts(c.crawl.user_agent, c.crawl.max_pages_per_host, c.fetch.robots_cache_s,
              engine::BudgetsOf(c.crawl)) {}
  ~Impl();

  const engine::Config config;
  const std::string out;
  const int lock_fd;  // flock on OUT/.lock, held for the crawl's life
  std::unique_ptr<dedup::Filter> filter;
  std::unique_ptr<frontier::Frontier> frontier;
  std::unique_ptr<engine::Scope> scope;
  engine::HostTable hosts;
  std::unique_ptr<output::FetchLog> log;
  // The crawler's DNS (crawler/resolver.h); null with a proxy (it resolves).
  std::unique_ptr<engine::Resolver> resolver;
  std::unique_ptr<output::SeenLog> seen;  // a cluster node's with shared_dir (seen_log.h)
  // [recrawl] or dedup.payload on: OUT/history/ (output/history.h)
  std::unique_ptr<output::History> history;
  std::unique_ptr<output::WarcWriter> warc;
  engine::Counters counters;
  engine::Gate gate;
  engine::ResultQueue results;
  engine::RunState state;
  // [browser] render on: the Chromium pool (browser/pool.h; profiles and
  // its log under OUT/browser/). After results and state, which its pages
  // come back to, so it stops (answering what it holds) before they go.
  std::unique_ptr<browser::Pool> browser;
  std::unique_ptr<report::StatsWriter> stats;
  std::unique_ptr<checkpoint::Checkpointer> checkpointer;
  std::vector<std::unique_ptr<engine::Worker>> workers;
  std::unique_ptr<Node> cluster;                   // [cluster] set: this node of the job
  std::unique_ptr<report::MetricsServer> metrics;  // [metrics] listen set (stopped first)

  std::vector<std::string> seeds;                         // a new crawl's, until admitted
  std::vector<engine::RobotsFetchToStart> resume_robots;  // a resumed crawl's
  double elapsed_base = 0;                                // crawl time before this run
  uint64_t spilled_base = 0;                              // URLs spilled before this run
  frontier::Clock::time_point run_start = frontier::Clock::now();

  double Elapsed() const;
  report::StatsReport Report(bool running);
  // Run thread: renders the metrics text for the scrapes waiting (metrics.h).
  void PublishMetrics(bool running);
  [[nodiscard]] Status Describe(checkpoint::CheckpointInfo* info, bool running);
};

// OUT/history/, the live URL history and payload digests of a crawl with
// [recrawl] or dedup.payload on.
inline constexpr const char* kHistoryDir = "history";

// Opens OUT's outputs and builds every part around `filter` and `scope`.
// `sequence`: of the last checkpoint (0 for a new crawl); `log_bytes`: its
// dedup hash log lengths (CheckpointInfo::dedup_log_bytes; empty: none);
// `seeds`: a new crawl's, for the cluster's join (NodeJoiner).
Result<std::unique_ptr<Crawl::Impl>> BuildCrawl(
    const engine::Config& config, const std::string& out, int lock_fd,
    std::unique_ptr<dedup::Filter> filter, engine::Scope scope, uint64_t sequence,
    std::span<const uint64_t> log_bytes, const NodeJoiner* joiner,
    const std::vector<std::string>& seeds = {});

// The refusal of a config with cluster.redis set when the crawl was given no
// NodeJoiner (a program built without the cluster target).
Status NoCluster();

// flock on OUT/.lock, retried for up to `wait_s` (a dying checkpoint child
// may still hold it for a moment). Returns the descriptor (kept open).
Result<int> LockOut(const std::string& out, double wait_s);

}  // namespace crawler::crawl

#endif  // CRAWLER_CRAWL_IMPL_H_
