// The shards' state on this node (cluster.h, Death and leave): which shards
// have their state here (`ready`: restored, loaded or new), which this node
// handed over and has not taken back (`given`), the loads of shards taken
// over (shard_loads.h), and a resumed node's own checkpoint state until
// Start restores it (own_state.h). What a lease newly this process's means
// for its shard (OnGained) is decided here; what it means for the commits
// is the caller's (the returned Origin).
//
// Threads: the flags are atomics any thread reads (the workers' Owns,
// Fetchable, GivenAway); Take and Loaded are a worker's, inside a gate pass;
// the rest is the exchange thread's (Start's, before it).
#ifndef CRAWLER_CLUSTER_SHARD_STATES_H_
#define CRAWLER_CLUSTER_SHARD_STATES_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/membership/leases.h"
#include "cluster/membership/own_state.h"
#include "cluster/membership/shard_loads.h"
#include "cluster/membership/tenure.h"
#include "crawler/config.h"
#include "engine/placement.h"

namespace crawler::cluster {

class ShardStates {
 public:
  // `seed`: the job's (a host's shard); `out_dir`: this node's OUT.
  ShardStates(const engine::ClusterConfig& cfg, uint64_t seed,
              const std::string& out_dir);

  // cluster.shared_dir is set: shards move between nodes through
  // checkpoints (takeover, handoff).
  bool takeover() const { return takeover_; }
  uint32_t ShardOf(std::string_view host_key) const;

  // Any thread. Is `shard`'s state here? Did this node hand it over (and not
  // take it back)? The flags themselves, for the parts that set them
  // (Tenure::Apply clears a shard not held; Handoffs, one handed over).
  bool Ready(uint32_t shard) const { return ready_[shard].load(); }
  bool GivenAway(uint32_t shard) const { return given_[shard].load() && !Ready(shard); }
  std::atomic<bool>* ready() { return ready_.get(); }
  void GaveUp(uint32_t shard) { given_[shard] = true; }

  // What a gained lease means for the commits (Commits::From or Forget).
  struct Origin {
    enum class Kind : uint8_t { kNone, kFrom, kForget };
    Kind kind = Kind::kNone;
    std::string from;  // kFrom's: "NODE SEQ"
  };
  // A lease newly this process's (Tenure::Apply's `gained`): the shard's
  // state is loaded from its source, restored from the checkpoint this node
  // resumed from, or here already. `released`: this node gave it up and
  // takes it back.
  Origin Gained(uint32_t shard, const LeaseReply& reply, bool released,
                Tenure::Round* round);

  // The shards being loaded (their leases are renewed meanwhile).
  bool Loading(uint32_t shard) const { return loads_.Wants(shard); }
  const std::map<uint32_t, std::string>& loading() const { return loads_.wanted(); }
  // One round of the loads (ShardLoads::Step).
  std::optional<ShardLoads::Finished> StepLoads(
      const ShardLoads::DirOf& dir_of, const std::function<bool(uint32_t)>& skip);
  // A worker's: the state to restore; then the shards restored are ready.
  std::optional<engine::ShardState> Take() { return loads_.Take(); }
  void Loaded(uint32_t shard) { ready_[shard] = true; }
  // Nothing loading, nothing waiting for a worker.
  bool Quiet() const { return loads_.Quiet(); }

  // A resumed node's own state: kept until Start's first heartbeat, then
  // restored for the shards held again (RestoreOwn: the queued URLs left to
  // the other shards' new owners, counted).
  void StashOwn(engine::ShardState own);
  const ResumedFrom& own() const { return own_.from(); }
  bool resumed() const { return own_.resumed() != nullptr; }
  size_t RestoreOwn();

 private:
  const std::string node_;
  const uint64_t seed_;
  const uint32_t shards_;
  const bool takeover_;
  ShardLoads loads_;
  std::unique_ptr<std::atomic<bool>[]> ready_, given_;
  OwnState own_;
};

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_SHARD_STATES_H_
