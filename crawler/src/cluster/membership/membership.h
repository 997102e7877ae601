// Membership of one node in a job (cluster.h, Membership, The end): joining
// it (JoinJob: the join script, its refusals, the job's identity on disk),
// the start (cluster.min_nodes joined), the job's nodes, this node's idle or
// busy state as Redis has it, the end test and the leave. It builds the
// commands and reads their replies; Cluster sends them on its connection
// (its reconnect, retry and refusal handling apply to every one). Pure
// logic but JoinJob, which connects. Unit-tested without Redis
// (cluster_membership_test.cc); its scripts on a real redis-server in
// cluster_lease_test.cc ("Done*", "State*") and by every real-process test.
//
// The rules it keeps:
// - a node that was part of a job (OUT/cluster-job.json) never creates it
//   again: a Redis that lost the job, or another one's, is an error naming
//   what was found (exit 2), not a new job with a new seed;
// - this node's state is written when it changes, and again after anything
//   that may have changed it in Redis behind this object's back (a
//   reconnect, a heartbeat's lease taken, a read: they mark the node busy);
// - the end test is asked only by an idle node, O(1) first (kDoneHintScript),
//   O(nodes) only when that cannot tell (kDoneScript).
#ifndef CRAWLER_CLUSTER_MEMBERSHIP_H_
#define CRAWLER_CLUSTER_MEMBERSHIP_H_

#include <hiredis/hiredis.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "cluster/membership/done.lua.h"
#include "cluster/membership/done_hint.lua.h"
#include "cluster/membership/join.lua.h"
#include "cluster/membership/release.lua.h"
#include "cluster/membership/start.lua.h"
#include "cluster/membership/state.lua.h"
#include "cluster/redis/redis.h"
#include "cluster/redis/redis_link.h"
#include "crawler/config.h"

namespace crawler::cluster {

// What a join brings back: the connection it joined on, and the job's.
struct JoinedJob {
  RedisAddress address;
  std::unique_ptr<Redis> redis;
  std::string token;              // this process's, in its liveness key
  uint64_t seed = 0;              // the job's: host -> shard
  std::string incarnation;        // the job's (OUT/cluster-job.json)
  std::string out_rel;            // OUT under cluster.shared_dir ("" without it)
  std::vector<uint32_t> weights;  // seed hosts per shard (shard_owners.h)
};

// Connects and joins `config`'s job. Errors: Redis unreachable
// (kInvalidArgument, naming cluster.redis), a refusal (naming the reason),
// the job lost or another (JobLost, exit 2). `resumed`: Redis may be
// restarting too; it is waited for (a minute). `seeds`: a new crawl's. A
// set `stop` (a signal) ends each wait here (StoppedWhile: nothing done).
Result<JoinedJob> JoinJob(const engine::Config& config, const std::string& out_dir,
                          bool resumed, const std::vector<std::string>& seeds,
                          const std::atomic<bool>* stop = nullptr);

class Membership {
 public:
  Membership(std::string job, std::string node, uint32_t min_nodes, bool takeover);

  // The job's key `suffix`: "crawler:{JOB}:suffix".
  std::string Key(const std::string& suffix) const;

  // The start: kStartScript's command, then its reply: true once the job
  // started (the nodes, sorted, in nodes()); false: not yet.
  std::vector<std::string> StartCommand() const;
  bool Started(ReplyView reply);
  const std::vector<std::string>& nodes() const { return nodes_; }
  // A members read named the job's nodes (empty: it did not say).
  void SetNodes(std::vector<std::string> nodes);

  // This node's state: kStateScript's command when `idle` is not what Redis
  // has (or that is unknown), else none. busy() is `idle`'s opposite, as
  // last seen (work-aware placement gives only when busy).
  std::optional<std::vector<std::string>> StateCommand(bool idle);
  void StateWritten(bool ok);  // the command's outcome (false: unknown)
  void StateUnknown() { sent_ = State::kUnknown; }
  bool busy() const { return busy_; }
  // Whether busy() has been asked yet (StateCommand): before, this node
  // cannot say it is idle.
  bool state_known() const { return asked_ != State::kUnknown; }

  // The end test: its first look, then (that reply 2) the full one.
  std::vector<std::string> DoneHintCommand() const;
  std::vector<std::string> DoneCommand() const;

  // The exchange thread's. False: the round failed (RedisLink::Failed).
  // Writes this node's state when it changed (StateCommand).
  bool Publish(RedisLink& redis, bool idle);
  // The end test (an idle node's): the first look costs O(1); the full
  // test, O(nodes), runs only when that cannot tell. done() once it says
  // so (any thread).
  bool TestDone(RedisLink& redis);
  bool done() const { return done_.load(); }

  // Gives up `leases` (shard, "NODE EPOCH"): each is deleted only while it
  // is still that token's (kReleaseScript), so a release sent twice is
  // harmless. Replies how many it deleted.
  std::vector<std::string> ReleaseCommand(
      const std::vector<std::pair<uint32_t, std::string>>& leases) const;
  // The leave: gives up `leases` and the liveness key.
  std::vector<std::vector<std::string>> LeaveCommands(
      const std::vector<std::pair<uint32_t, std::string>>& leases) const;

 private:
  enum class State : uint8_t { kUnknown, kIdle, kBusy };
  const std::string job_, node_;
  const uint32_t min_nodes_;
  const bool takeover_;
  std::vector<std::string> nodes_;
  std::atomic<bool> done_{false};
  State sent_ = State::kUnknown, asked_ = State::kUnknown;
  bool busy_ = false;
};

// The Lua scripts this part runs (redis/redis.h, "Scripts", has the shared rule).
namespace cluster_wire {

// This node's state for the end test. KEYS: state, busy. ARGV: node,
// idle|busy.
// kStateScript: state.lua (embedded at build time)

// Join. KEYS: meta, nodes, started, alive:NODE.
// ARGV: node, token, shards, seed, config hash, config JSON, ttl ms, open
// ('1': with cluster.shared_dir a new node may join a started job; the
// shards it is given are handed over to it), the incarnation this node was
// part of ('': none, a new node), a new incarnation id, the seed hosts per
// shard under this seed (shard_owners.h, EncodeWeights: the creator's are
// the job's, fixed, so the placement never changes under a live set).
// A node that was part of the job never creates it: the job missing
// ('missing') or created anew ('incarnation') means Redis lost its data or
// is another server.
// Returns {verdict, detail, incarnation, weights}.
// kJoinScript: join.lua (embedded at build time)

// Start barrier. KEYS: nodes, started. ARGV: min nodes. Returns the node set
// once the job has started, else nil.
// kStartScript: start.lua (embedded at build time)

// The end test's first look, O(1) whatever the node count. KEYS: done, sent,
// delivered, busy, and ARGV: the liveness keys' prefix. Returns 1 (done), 0
// (not done: a batch is unread, or a live node is busy; one busy node is
// looked at, a random one) or 2 (the full test, kDoneScript, decides).
// kDoneHintScript: done_hint.lua (embedded at build time)

// The end test. KEYS: state, sent, delivered, done, holder, holds,
// alive:NODE... ARGV: takeover (1: cluster.shared_dir), the nodes. A dead
// node (its liveness key expired) is not idle: it will resume from its last
// checkpoint and may find links for the others again; unless, with takeover,
// it is the last holder of no shard (they were all taken over from its
// checkpoint). O(nodes), whatever the shard count: holds has each node's
// count of shards (the lease script keeps it). A job whose leases were taken
// before holds existed has none: the holder hash is walked then.
// kDoneScript: done.lua (embedded at build time)

// A leaving node gives its leases up. KEYS: lease:S... ARGV: "NODE EPOCH"
// per shard. Deletes each lease still this node's (the holder hash keeps its
// name: the shard is taken over from its last commit).
// kReleaseScript: release.lua (embedded at build time)

}  // namespace cluster_wire

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_MEMBERSHIP_H_
