// A resumed node's own checkpoint state (cluster.h, Death and leave), from
// --resume until Start: the frontier (hosts and queued URLs) and the host
// table of the checkpoint it resumed from. Other nodes may have taken some
// of its shards over while it was away, so it is restored only for the
// shards this process holds again (Start's first heartbeat: a lease reply
// OnGained says kRestoreOwn for, Restore); the queued URLs of the others are
// left to their new owners (counted: `dropped`). Pure, no Redis: the
// exchange thread's (Start's, before it). Unit-tested
// (cluster_loads_test.cc, "OwnState*").
#ifndef CRAWLER_CLUSTER_OWN_STATE_H_
#define CRAWLER_CLUSTER_OWN_STATE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "cluster/membership/shard_loads.h"
#include "engine/placement.h"

namespace crawler::cluster {

class OwnState {
 public:
  using ShardOf = std::function<uint32_t(std::string_view host_key)>;

  // The state resumed from; its shards are those its hosts are in.
  void Stash(engine::ShardState own, const ShardOf& shard_of);
  // What OnGained reads: null unless a state is stashed and not taken yet.
  const ResumedFrom* resumed() const { return own_ ? &from_ : nullptr; }
  // The checkpoint resumed from and its shards (kept after Take).
  const ResumedFrom& from() const { return from_; }
  // `shard` is this process's again: restored from the stash at Take.
  void Restore(uint32_t shard) { restore_.push_back(shard); }
  // The stash's part of the shards restored (own = true), for a worker;
  // nullopt if nothing was stashed. `*dropped`: queued URLs of the other
  // shards. The stash is gone after.
  std::optional<engine::ShardState> Take(const ShardOf& shard_of, size_t* dropped);

 private:
  ResumedFrom from_;
  std::optional<engine::ShardState> own_;
  std::vector<uint32_t> restore_;
};

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_OWN_STATE_H_
