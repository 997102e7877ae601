// Handoff, the giving side of a shard's move to another live node (cluster.h,
// HandoffWork): a node joined, came back, or balancing gave it shards. Owns
// the shards' transfer states (transfer.h), the per-shard "being handed"
// flags the workers read, the checkpoints kept for the takers
// (kept_checkpoints.h) and the leases to give up in Redis. Its own lock;
// Cluster may hold its mutex when it calls in (the lock order: Cluster's,
// then this one's, then the receiver's), never the other way round.
//
// A shard goes (transfer.h has each state's rule): HandTo (its links go to
// its stream, its hosts wait) -> drained by a worker (Draining, Drained) ->
// a checkpoint is wanted (CutWanted) and cut (Cut) -> that checkpoint is
// committed: HandOver keeps it in OUT/handoff/SEQ/, gives the shards up here
// (the `give_up` callback: the Cluster's own books) and their leases in
// Redis (SendReleases) -> a worker drops their queued URLs (TakeDrops,
// Dropped) -> the heartbeat learns that the new owner took the lease and
// committed (Ask, Answers), and the kept checkpoint is pruned once no
// shard's source names it.
#ifndef CRAWLER_CLUSTER_HANDOFF_H_
#define CRAWLER_CLUSTER_HANDOFF_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "cluster/exchange/receiver.h"
#include "cluster/handoff/kept_checkpoints.h"
#include "cluster/handoff/transfer.h"
#include "cluster/membership/membership.h"
#include "cluster/redis/log_every.h"
#include "cluster/redis/redis.h"

namespace crawler::cluster {

class Handoffs {
 public:
  // `ready`: the Cluster's per-shard "state is here" flags (a shard handed
  // over is not ready; one that stays is ready again). `receiver`: a shard
  // that stays has its pending entries claimed again.
  Handoffs(std::string node, uint32_t shards, const std::string& out_dir,
           std::atomic<bool>* ready, Receiver& receiver);

  // The exchange thread. Starts handing `shard` over to `to`, or (to ==
  // this node) keeps it if its lease was not given up yet.
  void HandTo(uint32_t shard, const std::string& to) EXCLUDES(mu_);
  // Gives up the shards whose handoff checkpoint is `committed` or older:
  // keeps that checkpoint in OUT/handoff/SEQ/, calls `give_up(sequence,
  // shards)` (no lock of this part held: the Cluster's books, which call
  // GaveUp for each), then sends their leases' releases. False: the
  // connection broke.
  using GiveUp = std::function<void(uint64_t, const std::vector<uint32_t>&)>;
  bool HandOver(Redis& redis, const Membership& members, uint64_t committed,
                const GiveUp& give_up) EXCLUDES(mu_);
  void GaveUp(uint32_t shard, uint64_t sequence, const std::string& lease) EXCLUDES(mu_);
  // The leases given up here and not confirmed yet, sent (again: each
  // release deletes a lease only while it is still this node's with that
  // epoch). False: the connection broke or Redis refused.
  bool SendReleases(Redis& redis, const Membership& members) EXCLUDES(mu_);
  // The heartbeat's questions of Redis (appended to `cmds`): where the
  // shards given up are sourced now, who holds their leases, which kept
  // checkpoints a source still names; Answers reads the replies.
  struct Asked {
    std::vector<uint32_t> released, untaken;
    bool kept = false;
    size_t at = 0;  // the first command's index
  };
  Asked Ask(const std::function<std::string(const std::string&)>& key,
            std::vector<std::vector<std::string>>* cmds) EXCLUDES(mu_);
  void Answers(const Asked& asked, const std::vector<RedisReply>& replies) EXCLUDES(mu_);
  // Start: the checkpoint a resumed node restarted from is every shard's
  // source it held: kept like a handoff's.
  [[nodiscard]] Status Keep(uint64_t sequence) { return kept_.Keep(sequence); }

  // The workers' (engine/placement.h, ShardMoves).
  bool Work() const { return work_.load(); }
  bool Handing(uint32_t shard) const { return handing_[shard].load(); }
  std::vector<uint32_t> Draining() EXCLUDES(mu_);
  void Drained(const std::vector<uint32_t>& shards) EXCLUDES(mu_);
  std::vector<uint32_t> TakeDrops() EXCLUDES(mu_);
  void Dropped(const std::vector<uint32_t>& shards, uint64_t urls) EXCLUDES(mu_);

  // The checkpoint hooks: a drained shard wants a cut; a cut handoff
  // checkpoint not kept yet holds the next; `sequence` is cut.
  bool CutWanted() const EXCLUDES(mu_);
  bool HoldCuts() const EXCLUDES(mu_);
  void Cut(uint64_t sequence) EXCLUDES(mu_);

  // Transfers' questions, under this part's lock (transfer.h).
  bool BeingHanded(uint32_t shard) const EXCLUDES(mu_);
  bool Released(uint32_t shard) const EXCLUDES(mu_);
  bool Dropping(uint32_t shard) const EXCLUDES(mu_);
  bool Giving() const EXCLUDES(mu_);
  bool Quiet() const EXCLUDES(mu_);
  // Given up once and taken back (loaded again): this node's.
  void TakenBack(uint32_t shard) EXCLUDES(mu_);

 private:
  const std::string node_;
  std::atomic<bool>* const ready_;
  Receiver& receiver_;
  mutable Mutex mu_;
  Transfers transfers_ GUARDED_BY(mu_);
  // By shard: being handed over or given up and not yet dropped here (the
  // workers', lock-free).
  std::unique_ptr<std::atomic<bool>[]> handing_;
  std::atomic<bool> work_{false};  // shards to drain or to drop
  // OUT/handoff/SEQ/: the exchange thread's (Start's before it).
  KeptCheckpoints kept_;
  LogEvery keep_warn_{std::chrono::seconds(10)};  // a handoff checkpoint not kept
};

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_HANDOFF_H_
