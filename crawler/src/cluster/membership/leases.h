// The lease table of one cluster node (cluster.h, Leases): by shard, the
// epoch this node holds, what it knows of the lease (none, held, expired by
// its own clock, lost to another node) and until when it may fetch the
// shard's hosts. Pure logic, no Redis: the exchange thread feeds it the
// heartbeat's lease replies (Apply), the passing of time (Expire), a fenced
// acknowledge (Fenced) and a handoff (GiveUp); workers only read Valid and
// Lapsed. What a change means for the shard's state (load it, restore it,
// stop the node) is the caller's (shard_states.h, cluster.h). Unit-tested without
// Redis (cluster_lease_table_test.cc).
//
// The rules it keeps:
// - an epoch is only ever the one Redis last gave this node for the shard
//   (0: none), so every fenced script is sent with it (Token);
// - a lease is valid until the renewal's send time plus its TTL, less 1%
//   (Redis counts the TTL from when it ran the script, later by this node's
//   clock; 1% for the two clocks' rates);
// - a lease held and lost (another node took it, or it is free and this
//   node no longer holds it) is lapsed for good: Lapsed says so, so nothing
//   of its hosts goes out in the moment before the node stops. A robots.txt
//   retry went out to a lost host 10 ms from its new owner's request (the
//   partition test, in CI) when "lost" read as "never held".
#ifndef CRAWLER_CLUSTER_LEASES_H_
#define CRAWLER_CLUSTER_LEASES_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cluster/membership/ack.lua.h"
#include "cluster/membership/lease.lua.h"

namespace crawler::cluster {

// One shard's line of the heartbeat's kLeaseScript reply.
struct LeaseReply {
  // "held" (renewed, or taken with the epoch this node sent), "taken" (this
  // node's with a new epoch: it was free), "other" (another node holds it),
  // "free" (nobody holds it, and the script did not take it).
  std::string state;
  uint64_t epoch = 0;
  std::string holder;  // the last holder's name
  std::string source;  // the shard's source checkpoint, "NODE SEQ" or ""
  // Taken: where the source's node got the shard from, if the checkpoint
  // before the source lacks it ("NODE SEQ"; kCommitScript), or "".
  std::string source_prev;
};

class Leases {
 public:
  enum class State : uint8_t { kNone, kHeld, kExpired, kLost };
  // What one reply changed (Apply).
  struct Outcome {
    bool held = false;       // this node holds the lease now
    bool gained = false;     // held, and this process did not hold it before
    bool unnoticed = false;  // taken from under a lease this node thought valid
    bool again = false;      // held again with a new epoch (it was free)
    bool renewed = false;    // held again after it expired by this node's clock
    bool lost = false;       // held or expired here, now not this node's
  };

  Leases(std::string node, uint32_t shards, std::chrono::milliseconds ttl);

  // Exchange thread. The validity end of a renewal sent at `sent`.
  int64_t UntilOf(std::chrono::steady_clock::time_point sent) const;
  Outcome Apply(uint32_t shard, const LeaseReply& reply, int64_t until_ns);
  // Of `shards`, those held and past their validity at `now_ns` become
  // expired: which ones (each reported once).
  std::vector<uint32_t> Expire(const std::vector<uint32_t>& shards, int64_t now_ns);
  // Redis refused an acknowledge with this node's epoch: lapsed until the
  // next heartbeat tells (taken again, or lost).
  void Fenced(uint32_t shard);
  // Given up (handoff): not held, never lapsed.
  void GiveUp(uint32_t shard);

  State state(uint32_t shard) const { return state_[shard]; }
  uint64_t epoch(uint32_t shard) const { return epoch_[shard]; }
  // Held by this process, valid or not: renewed at each heartbeat.
  bool Holds(uint32_t shard) const {
    return state_[shard] == State::kHeld || state_[shard] == State::kExpired;
  }
  // "NODE EPOCH": what every fenced script checks against the lease.
  std::string Token(uint32_t shard) const;
  std::chrono::milliseconds ttl() const { return ttl_; }

  // Any thread. May this node fetch the shard's hosts at `now_ns`?
  bool Valid(uint32_t shard, int64_t now_ns) const {
    return now_ns < until_[shard].load();
  }
  // Held here once and not valid now (expired, fenced or lost), as opposed
  // to never held.
  bool Lapsed(uint32_t shard, int64_t now_ns) const {
    const int64_t until = until_[shard].load();
    return until != 0 && now_ns >= until;
  }

 private:
  const std::string node_;
  const std::chrono::milliseconds ttl_;
  std::vector<uint64_t> epoch_;  // 0: none
  std::vector<State> state_;
  // Steady ns until which the lease is this node's; 0: not held; 1: lapsed
  // for good (lost, or fenced until the next heartbeat).
  std::unique_ptr<std::atomic<int64_t>[]> until_;
};

// The Lua scripts this part runs (redis/redis.h, "Scripts", has the shared rule).
namespace cluster_wire {

// Leases (fencing). A shard's lease is the key lease:S = "NODE EPOCH" with a
// TTL; epoch:S only grows (INCR at every taking); the hash holder has, by
// shard, the last "NODE EPOCH" that took it (it does not expire).
// Take or renew. KEYS: lease:S..., epoch:S..., holder, source, state, holds,
// busy, source_prev (n shards: 2n + 6; holds counts, by node, the shards it is the last
// holder of, for the end test's O(1) check). A node that takes a shard is marked busy in
// state at once (the end test must not see its "idle" of before, while it loads). ARGV:
// node, ttl ms, takeover (1: this node may take a free shard another node held last, if
// it holds no epoch of it), then per shard the epoch this node holds (0: none). Returns
// per shard {state, epoch, holder, source}: 'held' (renewed), 'taken' (a new epoch),
// 'other' (a live lease of another holder), 'waiting' (free, but another node held it
// last and this node may not take it over); source: "NODE SEQ", the last committed
// checkpoint that holds the shard; and for a shard 'taken', source_prev (kCommitScript):
// where the source's node got the shard from, if its checkpoint before the source lacks
// it
// (''). A process that holds no epoch yet (just started or resumed) takes a
// lease of its node's name: that is an earlier process of this node (Join refuses a
// second live node of one name). A running one never takes it back from a later process:
// it gets 'other'.
// kLeaseScript: lease.lua (embedded at build time)

// Acknowledge and trim, fenced. KEYS: stream, lease:S. ARGV: "NODE EPOCH"
// (the caller's lease), the trim point when nothing is left pending (just
// past the newest ID acknowledged), the IDs. Refused unless the caller holds
// the lease with that epoch: returns {'fenced', the lease's value or ''}.
// Else {'ok', entries still pending}; trims below the oldest pending entry
// (XTRIM MINID, never MAXLEN), or, with none pending, everything delivered:
// acknowledgements come out of order (a taker acknowledges the entries it
// claimed from a dead owner after newer ones were), and an acknowledged entry
// left in the stream would count as lag for ever (the senders would hold
// their batches for it).
// kAckScript: ack.lua (embedded at build time)

}  // namespace cluster_wire

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_LEASES_H_
