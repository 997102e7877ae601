// Prometheus metrics ([metrics] listen = "HOST:PORT"): GET /metrics serves
// the text exposition format 0.0.4 on every node (single machine included);
// any other path is 404. Boost.Beast, one thread of its own.
//
// Where the figures come from. The crawl's figures (filter, frontier, host
// table) may be read only by the crawl's Run thread, the one that forks the
// checkpoint writer (stats_writer.h). So a scrape does not read them: it
// asks (Wanted), the Run thread renders the text between two of its 20 ms
// steps (RenderMetrics) and hands it over (Publish), and the scrape waits for
// it up to 250 ms, else serves the last text (a Run thread busy cutting a
// checkpoint or waiting for a cluster job to start). Each part's figures are
// read under that part's own lock, one part at a time: no lock is held
// across a scrape. What the Run thread spends rendering is itself a metric
// (crawler_metrics_render_seconds_total / crawler_metrics_renders_total).
#ifndef CRAWLER_METRICS_H_
#define CRAWLER_METRICS_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "report/stats_schema.h"

namespace crawler::report {

// A cluster node's exchange health, read at every heartbeat (crawl/node.h).
struct ClusterHealth {
  // The upper bounds of the Redis round-trip histogram's buckets, in seconds.
  static constexpr std::array<double, 10> kRttBounds = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1};
  std::vector<std::pair<uint32_t, uint64_t>> owned_lag;   // shard, unread entries
  std::array<uint64_t, kRttBounds.size()> rtt_buckets{};  // by bucket, not cumulative
  uint64_t rtt_count = 0;
  double rtt_sum_s = 0;
};

struct MetricsInput {
  const StatsReport& report;
  const ClusterHealth* cluster = nullptr;  // a cluster node's
  double render_s_total = 0;               // before this render
  uint64_t renders = 0;
};
// The text exposition format (0.0.4) of everything in `in`.
std::string RenderMetrics(const MetricsInput& in);

class MetricsServer {
 public:
  // Binds `listen` ("HOST:PORT"; port 0: any free one). Errors
  // (kInvalidArgument: a setup error) name the address.
  static Result<std::unique_ptr<MetricsServer>> Start(const std::string& listen);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  const std::string& url() const { return url_; }  // http://HOST:PORT/metrics
  // Run thread: a scrape waits for fresh text.
  bool Wanted() const { return wanted_.load() > published_.load(); }
  // Run thread: the text now; `render_s` is what rendering it cost.
  void Publish(std::string text, double render_s) EXCLUDES(mu_);
  double render_s_total() const EXCLUDES(mu_);
  // accept() failures (out of descriptors), each followed by a 100 ms wait.
  uint64_t accept_errors() const { return accept_errors_.load(); }
  void CountAcceptError() { accept_errors_.fetch_add(1); }
  uint64_t renders() const EXCLUDES(mu_);
  // Server thread: the text for one scrape.
  std::string Scrape() EXCLUDES(mu_);

 private:
  struct Io;
  MetricsServer(std::unique_ptr<Io> io, std::string url);
  std::unique_ptr<Io> io_;
  const std::string url_;
  std::atomic<uint64_t> wanted_{0}, published_{0}, accept_errors_{0};
  mutable Mutex mu_;
  std::condition_variable_any cv_;
  std::string text_ GUARDED_BY(mu_);
  double render_s_total_ GUARDED_BY(mu_) = 0;
  uint64_t renders_ GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace crawler::report

#endif  // CRAWLER_METRICS_H_
