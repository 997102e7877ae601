// A cluster node's own figures (ClusterReport: stats.json, /metrics, what
// cluster-stats reads from Redis) and its exchange health (ClusterHealth:
// Redis round trips, the owned shards' lag), under a lock of their own:
// the exchange thread counts, any thread reads. What the sender and the
// receiver count is theirs (Sender::Report, Receiver::Report).
#ifndef CRAWLER_CLUSTER_NODE_COUNTERS_H_
#define CRAWLER_CLUSTER_NODE_COUNTERS_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "cluster/membership/leases.h"
#include "cluster/redis/redis.h"
#include "report/metrics.h"
#include "report/stats_schema.h"

namespace crawler::cluster {

class NodeCounters {
 public:
  NodeCounters(const std::string& node, const std::string& job) {
    report_.node = node;
    report_.job = job;
  }

  // A point of the job's time line is due (kTimelineScript): at the first
  // heartbeat, then every `period_s`. The exchange thread's only.
  bool TimelineDue(std::chrono::steady_clock::time_point now, double period_s) {
    if (timeline_at_ != std::chrono::steady_clock::time_point{} &&
        now - timeline_at_ < std::chrono::duration<double>(period_s))
      return false;
    timeline_at_ = now;
    return true;
  }

  report::ClusterReport report() const EXCLUDES(mu_) {
    MutexLock lock(mu_);
    report::ClusterReport r = report_;
    r.fetches_deferred = deferred_.load();
    return r;
  }
  report::ClusterHealth health() const EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return health_;
  }

  // A worker's fetch put back: its shard's lease not held (any thread, no
  // lock: a hot path).
  void Deferred() const { deferred_.fetch_add(1, std::memory_order_relaxed); }
  // The crawl's own pages and rate (published with the node's figures).
  void SetCrawl(uint64_t pages, double pages_per_s) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    report_.pages = pages;
    report_.pages_per_s = pages_per_s;
  }
  void SetNodes(uint64_t nodes) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    report_.nodes = nodes;
  }
  // A heartbeat's lease round: `held` now, `unnoticed` lost without this
  // node's clock having seen them expire.
  void LeaseRound(uint64_t held, uint64_t unnoticed) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    report_.leases_held = held;
    report_.shards_owned = held;
    report_.lease_losses += unnoticed;
  }
  // Held leases that expired by this node's clock (Tenure::Expire).
  void LeasesExpired(uint64_t n) EXCLUDES(mu_) {
    if (n == 0) return;
    MutexLock lock(mu_);
    report_.leases_held -= std::min(report_.leases_held, n);
    report_.lease_losses += n;
  }
  // Leases given up (a handoff).
  void LeasesGivenUp(uint64_t n) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    report_.leases_held -= std::min(report_.leases_held, n);
    report_.shards_owned = report_.leases_held;
  }
  void AcksFenced(uint64_t n) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    report_.acks_fenced += n;
  }
  // Redis down `down_s` so far; connected again.
  void RedisDown(double down_s) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    report_.redis_down_s = down_s;
  }
  void Reconnected() EXCLUDES(mu_) {
    MutexLock lock(mu_);
    report_.redis_down_s = 0;
    ++report_.redis_reconnects;
  }
  // A takeover's load ended: its seconds, the URLs it queued, its end.
  void ShardLoad(double seconds, uint64_t urls, double end_unix) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    ++report_.shard_loads;
    if (urls < report_.biggest_load_urls) return;
    report_.biggest_load_s = seconds;
    report_.biggest_load_urls = urls;
    report_.biggest_load_end_unix = end_unix;
  }
  // A heartbeat's round trip, and the lag of the shards `asked` (the lag
  // script's reply `lags`) that `leases` holds.
  void Heartbeat(double rtt, const std::vector<uint32_t>& asked, ReplyView lags,
                 const Leases& leases) EXCLUDES(mu_) {
    const auto& bounds = report::ClusterHealth::kRttBounds;
    MutexLock lock(mu_);
    size_t bucket = 0;
    while (bucket < bounds.size() && rtt > bounds[bucket]) ++bucket;
    if (bucket < bounds.size()) ++health_.rtt_buckets[bucket];
    ++health_.rtt_count;
    health_.rtt_sum_s += rtt;
    if (!lags.array() || lags.size() != asked.size()) return;
    health_.owned_lag.clear();
    for (size_t i = 0; i < asked.size(); ++i) {
      if (leases.state(asked[i]) != Leases::State::kHeld) continue;
      health_.owned_lag.emplace_back(asked[i], lags[i].count());
    }
  }

 private:
  mutable Mutex mu_;
  report::ClusterReport report_ GUARDED_BY(mu_);
  report::ClusterHealth health_ GUARDED_BY(mu_);
  mutable std::atomic<uint64_t> deferred_{0};            // Fetchable is const
  std::chrono::steady_clock::time_point timeline_at_{};  // the exchange thread's
};

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_NODE_COUNTERS_H_
