// Where this node's shards are, as its exchange thread decides it
// (cluster.h, Ownership): the heartbeat's read of the job's members and of
// the hash assign (the placement, shard_owners.h, overridden where a busy
// node gave shards), the shards this node wants from it (Want: renewed,
// taken, or handed to the node that has them now), and work-aware giving
// (balance.h: a busy node gives its heaviest shards to the least loaded live
// node, kGiveScript, through the handoff a join uses), with the load each
// heartbeat publishes.
//
// Not thread-safe: the exchange thread's (Start's, before it). The parts it
// reads and drives (the leases, the shards' states, the handoffs, the
// heartbeats' pace) keep their own rules.
#ifndef CRAWLER_CLUSTER_BALANCER_H_
#define CRAWLER_CLUSTER_BALANCER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/handoff/handoff.h"
#include "cluster/membership/balance.h"
#include "cluster/membership/heartbeats.h"
#include "cluster/membership/membership.h"
#include "cluster/membership/shard_owners.h"
#include "cluster/membership/shard_states.h"
#include "cluster/membership/tenure.h"
#include "cluster/redis/redis.h"
#include "cluster/redis/redis_link.h"
#include "crawl/node.h"
#include "crawler/config.h"

namespace crawler::cluster {

class Balancer {
 public:
  // The parts it reads and drives, all the Cluster's, which outlive it.
  struct Parts {
    Membership& members;
    Tenure& tenure;
    ShardStates& states;
    Handoffs& handoff;
    Heartbeats& beats;
    RedisLink& redis;
  };
  // `weights`: seed hosts per shard (the job's placement weights).
  // `continuous`: [recrawl]: nodes never idle, shards move only to an idle one.
  Balancer(const engine::ClusterConfig& cfg, Parts parts,
           const std::vector<uint32_t>& weights, bool continuous);

  void SetBacklogSource(crawl::NodeLife::BacklogSource source) {
    backlog_ = std::move(source);
  }
  // Start's: the shards the placement gives this node among `nodes`.
  std::vector<uint32_t> Placed(const std::vector<std::string>& nodes);

  // What the crawl says of itself, for the next give: its pages and rate;
  // `may_give`: neither failed nor leaving.
  struct Crawl {
    uint64_t pages = 0;
    double pages_per_s = 0;
    bool may_give = false;
  };
  // The heartbeat's kMembersScript command, and its reply: the nodes, the
  // live ones, assign when it moved, the least loaded live node. Then the
  // shards wanted (Want), then a give if this node is busy (Balance).
  std::vector<std::string> MembersCommand() const;
  void Members(ReplyView reply, const Crawl& crawl);
  // The heartbeat's load for kAliveScript: this node's queued URLs (0:
  // idle), '-' when it is no taker (taking shards, leaving, continuous, its
  // state not known yet), '' unchanged (the crawl could not look now, or no
  // balancing).
  std::string LoadToPublish(bool may_give);
  // Shards given to other nodes so far (any thread).
  uint64_t shards_given() const { return shards_given_.load(); }
  // The placement's version as this node's reads of its streams saw it
  // (Receiver::assign_seen). Moved past the one the last heartbeat read (a
  // give to this node, a join, a leave): the next heartbeat, which reads
  // it, goes at once (Heartbeats::Soon), not up to heartbeat_s later; once
  // per version seen. Before, a give reached its taker at the taker's next
  // heartbeat: 1.5 s after it was handed over in a 6-node bench (2 s
  // heartbeats), a give made in the crawl's last seconds too late to help.
  // A node that holds no shard reads no stream: it learns at its heartbeat.
  void Seen(const std::string& version);

 private:
  std::string Key(const std::string& suffix) const { return p_.members.Key(suffix); }
  // The shards to renew or take at the next heartbeat: those held, and those
  // the placement gives this node among `live`; those held that it gives
  // another node are handed to it.
  void Want(const std::vector<std::string>& live);
  // Gives this node's heaviest shards (ShardsToGive) to `taker`, with `load`
  // URLs queued there, and starts handing them over.
  void Balance(const std::string& taker, uint64_t load, const Crawl& crawl);
  // The queued URLs of the shards held here and ready (false: the crawl
  // could not look now).
  bool HeldBacklog(std::vector<ShardBacklog>* backlog);

  const engine::ClusterConfig& cfg_;
  const Parts p_;
  const bool continuous_;
  crawl::NodeLife::BacklogSource backlog_;  // the crawl's queued URLs by host
  ShardOwners owners_;
  std::string soon_for_;  // the version Seen last asked a heartbeat for
  std::chrono::steady_clock::time_point last_give_{};
  RecentRate rate_;  // this node's pages per second
  std::atomic<uint64_t> shards_given_{0};
};

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_BALANCER_H_
