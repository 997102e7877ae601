// The commits of one cluster node's checkpoints (cluster.h, Death and leave;
// kCommitScript): which shards, with which lease epochs, each checkpoint cut
// holds; which are published and which committed; and where the state of a
// shard came from (the checkpoint it was loaded or resumed from) until the
// node's checkpoint before a commit holds the shard itself. Pure logic, no
// Redis: Cluster feeds it the cuts (OnCut), the publishes, the loads and the
// lease replies, sends what Next asks and reports Redis's answer (Accepted,
// Refused). Not thread-safe: the Cluster guards it with its mutex.
// Unit-tested without Redis (cluster_commits_test.cc).
//
// The rules it keeps:
// - only the newest published checkpoint is committed (one not committed
//   yet is passed over: its successor holds all it did);
// - a commit names, for each shard the node's checkpoint before it lacks,
//   where its state came from ("SHARD EPOCH NODE SEQ"): should this
//   checkpoint be damaged, a taker loads the shard from there, as the one
//   before cannot give it (without it a moved shard was
//   "restored" empty);
// - that name is dropped at the first commit whose checkpoint before holds
//   the shard;
// - a shard given up (handoff) leaves every cut not committed yet: no later
//   commit names it (Redis never shows this node holding a shard that its
//   committed checkpoint lacks).
#ifndef CRAWLER_CLUSTER_COMMITS_H_
#define CRAWLER_CLUSTER_COMMITS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cluster/membership/commit.lua.h"

namespace crawler::cluster {

class Commits {
 public:
  using Held = std::vector<std::pair<uint32_t, uint64_t>>;  // shard, epoch

  // Checkpoint `sequence` was cut holding `shards`; then published.
  void Cut(uint64_t sequence, Held shards) { cuts_[sequence] = std::move(shards); }
  void Published(uint64_t sequence) { published_ = std::max(published_, sequence); }
  uint64_t published() const { return published_; }
  uint64_t committed() const { return committed_; }
  bool Pending() const { return published_ > committed_; }

  // The state of `shard` here came from checkpoint `source` ("NODE SEQ"), or
  // from none (a new shard, or this node's own since it started).
  void From(uint32_t shard, const std::string& source) { from_[shard] = source; }
  void Forget(uint32_t shard) { from_.erase(shard); }
  // `shard` was given up: no cut not committed yet holds it any more.
  void GaveUp(uint32_t shard);
  // The lease of `shard` expired and this node took it again at `epoch`,
  // the one after its own (nobody held it meanwhile): what the cuts not
  // committed yet hold of it is still this node's alone, so they commit
  // under `epoch` (with the old one the fence refused them, and the node
  // stopped for nothing: a chaos run after Redis was away past lease_s).
  void TakenAgain(uint32_t shard, uint64_t epoch);

  // What to commit now (nothing when the newest published is committed).
  struct Request {
    uint64_t sequence = 0;
    Held shards;
    std::vector<std::string> args;  // "SHARD EPOCH[ NODE SEQ]", kCommitScript
    std::set<uint32_t> before;      // the shards of the checkpoint before
  };
  std::optional<Request> Next() const;
  // Redis committed it; or refused it (fenced: never tried again).
  void Accepted(const Request& request);
  void Refused(const Request& request) { committed_ = request.sequence; }

 private:
  // The shards of this node's checkpoint before `sequence`: published and
  // not committed (a commit failed or came late), else the last committed.
  std::set<uint32_t> ShardsBefore(uint64_t sequence) const;

  std::map<uint64_t, Held> cuts_;  // not committed yet
  uint64_t published_ = 0;
  uint64_t committed_ = 0;
  std::set<uint32_t> last_committed_;  // the shards of the last commit
  std::map<uint32_t, std::string> from_;
};

// The Lua scripts this part runs (redis/redis.h, "Scripts", has the shared rule).
namespace cluster_wire {

// The fenced commit of a published checkpoint. KEYS: holder, source,
// commits, source_prev. ARGV: node, sequence, then "SHARD EPOCH" of each
// shard the checkpoint holds, followed by " NODE SEQ" when the node's
// checkpoint before this one lacks the shard: the checkpoint its state here
// came from (a takeover's or a handoff's source). Refused ({'fenced', shard,
// its holder}) unless this node is still every one's last holder with that
// epoch; else the checkpoint becomes each shard's source (where a taker
// loads it from) and the node's committed one. source_prev keeps, by shard,
// where to load it from should this checkpoint be damaged: the one before
// it on the node's disk falls short (a resume or a taker falls back to it),
// and the giver keeps its handoff checkpoint while source_prev names it.
// kCommitScript: commit.lua (embedded at build time)

}  // namespace cluster_wire

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_COMMITS_H_
