// Tenure: the shards this node wants and holds (cluster.h, Leases): the
// lease table (leases.h), the shards asked for at every heartbeat (the lease
// command), the heartbeat's lease replies applied and logged as one round,
// leases expiring by this node's clock, and the held shards' epochs, which a
// checkpoint's cut names. What a lease newly held means for the shard's
// state (load it, restore it) is the caller's (`Gained`), and so is what a
// lost one means for the node (it stops). The exchange thread's, but for
// Valid and Lapsed (any thread: leases.h) and Holding (its own lock, taken
// after Cluster's mutex, never the other way round).
#ifndef CRAWLER_CLUSTER_TENURE_H_
#define CRAWLER_CLUSTER_TENURE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "cluster/exchange/inbox.h"
#include "cluster/membership/leases.h"
#include "cluster/redis/redis.h"

namespace crawler::cluster {

class Tenure {
 public:
  Tenure(std::string node, uint32_t shards, std::chrono::milliseconds ttl, bool takeover);

  // The table: epochs, tokens, states (leases.h).
  const Leases& leases() const { return leases_; }
  Leases& leases() { return leases_; }
  // Any thread, by this node's clock: may it fetch `shard`'s hosts now? Was
  // the shard held and is no longer valid?
  bool Valid(uint32_t shard) const;
  bool Lapsed(uint32_t shard) const;

  // The shards asked for at every heartbeat (renewed, or taken).
  const std::vector<uint32_t>& wanted() const { return wanted_; }
  void SetWanted(std::vector<uint32_t> shards) { wanted_ = std::move(shards); }
  // `shards` are given up (a handoff): not held, not asked for, in no later
  // cut. Their tokens ("NODE EPOCH") as they were.
  std::map<uint32_t, std::string> GiveUp(const std::vector<uint32_t>& shards)
      EXCLUDES(mu_);
  // The lease script for the wanted shards; `key` makes the job's keys.
  std::vector<std::string> Command(
      const std::function<std::string(const std::string&)>& key) const;

  // "5 (epoch 1), 15 (epoch 2)": shards and their epochs, for one log line
  // (the first 32; a node may own hundreds).
  class ShardList {
   public:
    void Add(uint32_t shard, uint64_t epoch);
    bool empty() const { return n_ == 0; }
    size_t size() const { return n_; }
    std::string str() const;

   private:
    size_t n_ = 0;
    std::string text_;
  };
  // What one heartbeat's lease replies changed.
  struct Round {
    uint64_t held = 0;
    ShardList unnoticed, again, renewed, lost, takeovers;
    // Of `again`, those taken at the epoch after this node's own (nobody
    // else held them meanwhile): shard, new epoch.
    std::vector<std::pair<uint32_t, uint64_t>> taken_again;
    std::string lost_to, took_from;
  };
  using Gained = std::function<void(uint32_t, const LeaseReply&, Round*)>;
  // The heartbeat's lease replies (`reply`, sent at `sent`) for the wanted
  // shards: each lease newly this process's goes to `gained`; a shard not
  // held has its `ready` flag cleared. Logs the round and keeps Holding.
  // Nullopt: a reply that does not answer the wanted shards.
  std::optional<Round> Apply(ReplyView reply, std::chrono::steady_clock::time_point sent,
                             std::atomic<bool>* ready, const Gained& gained)
      EXCLUDES(mu_);
  // Held leases past their validity by this node's clock, logged (once
  // each): how many.
  size_t Expire();
  // The shards held and their epochs, as the last round left them.
  std::map<uint32_t, uint64_t> Holding() const EXCLUDES(mu_);

  // Acknowledges and trims what published checkpoints hold (`acks`), one
  // fenced kAckScript per shard. Acks of a shard whose lease is not held
  // wait (for a lease taken again), but those of a shard `released` (handed
  // over: its new owner claims what is still pending) go; Redis refuses
  // those of an epoch it no longer has (the lease is marked Fenced: the
  // next heartbeat tells whether it only expired or was lost).
  struct Acked {
    std::vector<StreamEntry> keep;  // to try again
    uint64_t fenced = 0;            // shards Redis refused
    bool ok = true;                 // false: the connection broke
  };
  Acked Acknowledge(Redis& redis, std::vector<StreamEntry> acks,
                    const std::function<bool(uint32_t)>& released,
                    const std::function<std::string(const std::string&)>& key);

 private:
  void Log(const Round& round) const;

  const std::string node_;
  const bool takeover_;
  Leases leases_;
  std::vector<uint32_t> wanted_;
  mutable Mutex mu_;
  std::map<uint32_t, uint64_t> holding_ GUARDED_BY(mu_);  // held shard -> epoch
};

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_TENURE_H_
