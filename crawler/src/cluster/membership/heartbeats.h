// When a cluster node's exchange thread sends its heartbeat (cluster.h,
// Leases): the heartbeat renews the leases, and takes the ones this node
// wants and does not hold yet (a handoff, a balancing give, a takeover).
// Pure logic, no Redis; unit-tested without it (cluster_parts_test.cc).
//
// The rule: every cluster.heartbeat_s; while shards this node wants are
// not held yet, 4x as often (but not more often than every 50 ms), for two
// lease TTLs after the last such shard appeared, so a shard is taken soon
// after its holder gives it up, not up to a heartbeat later (a balancing
// give took 3.8 s to land, 2 heartbeats, on a 57 s crawl; 0.6 s with
// this). And at the next round (Soon) when the reads see the placement
// move: a give to this node is learnt then, not at its next heartbeat.
// When every wanted shard is held the normal period is back at once. A
// node taking shards publishes no load (its queue does not show them yet):
// taking().
#ifndef CRAWLER_CLUSTER_HEARTBEATS_H_
#define CRAWLER_CLUSTER_HEARTBEATS_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <set>

#include "cluster/membership/alive.lua.h"
#include "cluster/membership/full.lua.h"
#include "cluster/membership/timeline.lua.h"

namespace crawler::cluster {

class Heartbeats {
 public:
  using Clock = std::chrono::steady_clock;
  Heartbeats(double heartbeat_s, Clock::duration lease_ttl)
      : period_(Period(heartbeat_s)),
        eager_period_(Period(std::max(0.05, heartbeat_s / 4))),
        lease_ttl_(lease_ttl) {}

  // Is a heartbeat due at `now`? If so, it counts as sent.
  bool Due(Clock::time_point now) {
    Clock::duration period = now < eager_until_ ? eager_period_ : period_;
    if (soon_) period = std::min(period, kSoonest);
    if (now - last_ <= period) return false;
    last_ = now;
    soon_ = false;
    return true;
  }
  // The placement moved (Balancer::Seen): the next heartbeat, which reads
  // it, goes at the next round (50 ms after the last one at the least),
  // not up to a period later.
  void Soon() { soon_ = true; }
  // The shards this node wants and does not hold, as of `now`.
  void Unheld(std::set<uint32_t> unheld, Clock::time_point now) {
    bool more = false;
    for (uint32_t s : unheld) more |= unheld_.count(s) == 0;
    if (more) eager_until_ = now + 2 * lease_ttl_;
    if (unheld.empty()) eager_until_ = {};
    unheld_ = std::move(unheld);
  }
  bool taking() const { return !unheld_.empty(); }

 private:
  static constexpr Clock::duration kSoonest = std::chrono::milliseconds(50);
  static Clock::duration Period(double s) {
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::milliseconds(static_cast<int64_t>(s * 1000)));
  }
  const Clock::duration period_, eager_period_, lease_ttl_;
  Clock::time_point last_{}, eager_until_{};
  std::set<uint32_t> unheld_;
  bool soon_ = false;
};

// Redis flagged full (kFullScript: some node's sends are refused), as the
// heartbeats read it: while it was seen within the last three heartbeats,
// a checkpoint is wanted at most every 2 s, so that the entries read here
// since the last cut are acknowledged and trimmed, which frees Redis's
// memory (Cluster::CheckpointWanted). Any thread.
class FullFlag {
 public:
  using Clock = std::chrono::steady_clock;
  explicit FullFlag(double heartbeat_s)
      : window_(std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(3 * heartbeat_s))) {}
  void Seen(Clock::time_point now) { seen_ = now.time_since_epoch().count(); }
  // Is a cut for it due at `now`? CutAt: one was wanted then.
  bool Due(Clock::time_point now) const {
    const Clock::rep t = now.time_since_epoch().count();
    return t - seen_.load() < window_.count() &&
           t - cut_.load() >
               std::chrono::duration_cast<Clock::duration>(std::chrono::seconds(2))
                   .count();
  }
  void CutAt(Clock::time_point now) { cut_ = now.time_since_epoch().count(); }

 private:
  const Clock::duration window_;
  std::atomic<Clock::rep> seen_{0}, cut_{0};
};

// The Lua scripts this part runs (redis/redis.h, "Scripts", has the shared rule).
namespace cluster_wire {

// Liveness, figures and load. KEYS: alive:NODE, stats, load. ARGV: token,
// ttl ms, node, figures JSON, the node's load (balance.h: URLs queued for
// the shards it holds; '-': none to publish, it is not a taker now; '':
// unchanged).
// kAliveScript: alive.lua (embedded at build time)

// Redis is full: flags it for every node (they cut a checkpoint early, to
// acknowledge and trim). KEYS: full. ARGV: node, ttl ms.
// kFullScript: full.lua (embedded at build time)

// One point of the job's time line (`crawler cluster-stats --html`): this
// node's figures and Redis's used memory now, into a stream capped near
// kTimelineEntries. Refused when Redis is full (no allow-oom: the line has
// a gap then; the crawl never waits for it). KEYS: timeline. ARGV: max
// entries, node, figures (ClusterReport JSON), backlog (LoadToPublish).
// kTimelineScript: timeline.lua (embedded at build time)
// ~0.5 KB a point: at most a few MB of Redis; a point every 5 heartbeats
// (10 s by default): 3 nodes keep about 7 hours.
inline constexpr uint64_t kTimelineEntries = 8192;
inline constexpr double kTimelineBeats = 5;

}  // namespace cluster_wire

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_HEARTBEATS_H_
