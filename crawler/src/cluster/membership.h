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

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "cluster/redis.h"
#include "crawler/config.h"

namespace crawler::engine {

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
Result<JoinedJob> JoinJob(const Config& config, const std::string& out_dir, bool resumed,
                          const std::vector<std::string>& seeds,
                          const std::atomic<bool>* stop = nullptr);

class Membership {
 public:
  Membership(std::string job, std::string node, uint32_t min_nodes, bool takeover);

  // The job's key `suffix`: "crawler:{JOB}:suffix".
  std::string Key(const std::string& suffix) const;

  // The start: kStartScript's command, then its reply: true once the job
  // started (the nodes, sorted, in nodes()); false: not yet.
  std::vector<std::string> StartCommand() const;
  bool Started(const redisReply* reply);
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

  // The end test: its first look, then (that reply 2) the full one.
  std::vector<std::string> DoneHintCommand() const;
  std::vector<std::string> DoneCommand() const;

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
  State sent_ = State::kUnknown, asked_ = State::kUnknown;
  bool busy_ = false;
};

}  // namespace crawler::engine

#endif  // CRAWLER_CLUSTER_MEMBERSHIP_H_
