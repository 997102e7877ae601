// See shard_states.h.
#include "cluster/membership/shard_states.h"

#include "cluster/membership/shard_owners.h"

namespace crawler::cluster {

ShardStates::ShardStates(const engine::ClusterConfig& cfg, uint64_t seed,
                         const std::string& out_dir)
    : node_(cfg.node),
      seed_(seed),
      shards_(cfg.shards),
      takeover_(!cfg.shared_dir.empty()),
      loads_([shards = cfg.shards, seed, node = cfg.node,
              history_import = out_dir + "/history.import"](const ShardLoad& load) {
        return ReadShards(
            load, [&](std::string_view host) { return ShardOfHost(host, seed, shards); },
            history_import, node);
      }),
      ready_(new std::atomic<bool>[cfg.shards]),
      given_(new std::atomic<bool>[cfg.shards]) {
  for (uint32_t s = 0; s < shards_; ++s) {
    ready_[s] = false;
    given_[s] = false;
  }
}

uint32_t ShardStates::ShardOf(std::string_view host_key) const {
  return ShardOfHost(host_key, seed_, shards_);
}

ShardStates::Origin ShardStates::Gained(uint32_t s, const LeaseReply& reply,
                                        bool released, Tenure::Round* round) {
  given_[s] = false;  // this node's again: its queued URLs wait for it
  const Gain g = OnGained(s, reply, node_, takeover_, released, own_.resumed());
  switch (g.action) {
    case Gain::Action::kLoad:
      loads_.Want(s, g.source, g.prev);
      round->takeovers.Add(s, reply.epoch);
      if (round->took_from.empty()) round->took_from = g.source;
      return {};
    case Gain::Action::kRestoreOwn:
      own_.Restore(s);  // a resumed node's: owned once restored
      return {Origin::Kind::kFrom, node_ + " " + std::to_string(own_.from().sequence)};
    case Gain::Action::kReady:
      ready_[s] = true;  // a new shard, or this node's own since it resumed
      return {Origin::Kind::kForget, ""};
  }
  return {};
}

std::optional<ShardLoads::Finished> ShardStates::StepLoads(
    const ShardLoads::DirOf& dir_of, const std::function<bool(uint32_t)>& skip) {
  return loads_.Step(dir_of, skip, ShardLoads::Clock::now());
}

void ShardStates::StashOwn(engine::ShardState own) {
  own_.Stash(std::move(own), [this](std::string_view host) { return ShardOf(host); });
}

size_t ShardStates::RestoreOwn() {
  size_t dropped = 0;
  std::optional<engine::ShardState> st =
      own_.Take([this](std::string_view host) { return ShardOf(host); }, &dropped);
  if (st) loads_.Put(std::move(*st));
  return dropped;
}

}  // namespace crawler::cluster
