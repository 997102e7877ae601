// Handoff of shards between live cluster nodes (see cluster.h, HandoffWork):
// when a node joins a running job, or comes back, the shards rendezvous
// hashing now gives it are handed over by their holders: drained, cut into a
// committed checkpoint, given up, taken over from that checkpoint.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "cluster.h"
#include "cluster_wire.h"

namespace crawler::engine {

using namespace cluster_wire;  // NOLINT: the formats this file speaks

void Cluster::HandTo(uint32_t shard, const std::string& to) {
  MutexLock lock(mu_);
  auto it = handoff_.find(shard);
  if (to == cfg_.node) {
    // The newcomer went away before taking it: this node keeps it.
    if (it == handoff_.end()) return;
    handoff_.erase(it);
    handing_[shard] = false;
    ready_[shard] = true;
    handoff_work_ = !handoff_.empty() || !to_drop_.empty();
    spdlog::info("cluster: shard {} stays here (node {} went away before taking it)",
                 shard, to);
    return;
  }
  if (it != handoff_.end()) {
    it->second.to = to;
    return;
  }
  // From now on its links go to its stream and its hosts wait.
  handing_[shard] = true;
  ready_[shard] = false;
  handoff_[shard] = Handoff{Hand::kDraining, 0, to};
  handoff_work_ = true;
  spdlog::info(
      "cluster: handing shard {} over to node {}: draining its fetches, then a "
      "checkpoint",
      shard, to);
}

std::vector<uint32_t> Cluster::Draining() {
  MutexLock lock(mu_);
  std::vector<uint32_t> out;
  auto now = SteadyClock::now();
  // A worker scans the hosts for each answer: not at every loop.
  if (now - last_drain_ < std::chrono::milliseconds(100)) return out;
  last_drain_ = now;
  for (const auto& [shard, h] : handoff_)
    if (h.phase == Hand::kDraining) out.push_back(shard);
  return out;
}

void Cluster::Drained(const std::vector<uint32_t>& shards) {
  MutexLock lock(mu_);
  for (uint32_t s : shards) {
    auto it = handoff_.find(s);
    if (it != handoff_.end() && it->second.phase == Hand::kDraining)
      it->second.phase = Hand::kDrained;
  }
}

bool Cluster::CheckpointWanted() const {
  MutexLock lock(mu_);
  return std::any_of(handoff_.begin(), handoff_.end(),
                     [](const auto& h) { return h.second.phase == Hand::kDrained; });
}

bool Cluster::HoldCuts() const {
  MutexLock lock(mu_);
  if (released_.empty()) return false;
  uint64_t oldest = UINT64_MAX;
  for (const auto& [s, seq] : released_) oldest = std::min(oldest, seq);
  // checkpoint.prev/ is then the handoff checkpoint: one more cut would
  // remove it.
  return published_ > oldest;
}

bool Cluster::Released(uint32_t shard) const {
  MutexLock lock(mu_);
  return released_.count(shard) > 0;
}

bool Cluster::Handing(std::string_view url) const {
  return handing_[ShardOf(frontier::HostKey(url))].load();
}

std::vector<uint32_t> Cluster::TakeReleased() {
  MutexLock lock(mu_);
  std::vector<uint32_t> out;
  out.swap(to_drop_);
  dropping_.insert(out.begin(), out.end());
  return out;
}

void Cluster::Dropped(const std::vector<uint32_t>& shards, uint64_t urls) {
  MutexLock lock(mu_);
  // Nothing of theirs is read here any more (a shard taken back is read
  // again once loaded, when it is ready).
  for (uint32_t s : shards) {
    dropping_.erase(s);
    handing_[s] = false;
  }
  handoff_work_ = !handoff_.empty() || !to_drop_.empty();
  spdlog::info("cluster: {} queued URLs of {} shards handed over dropped here", urls,
               shards.size());
}

bool Cluster::HandOver() {
  if (failed_.load()) return true;
  std::vector<uint32_t> shards;
  std::string to;
  uint64_t sequence = 0;
  {
    MutexLock lock(mu_);
    for (const auto& [s, h] : handoff_) {
      if (h.phase != Hand::kCut || h.sequence > committed_seq_) continue;
      shards.push_back(s);
      to = h.to;
      sequence = std::max(sequence, h.sequence);
    }
  }
  if (shards.empty()) return true;
  std::vector<std::string> cmd = {"EVAL", kReleaseScript, std::to_string(shards.size())};
  for (uint32_t s : shards) cmd.push_back(Key("lease:" + std::to_string(s)));
  for (uint32_t s : shards) cmd.push_back(cfg_.node + " " + std::to_string(epoch_[s]));
  auto r = redis_->Command(cmd);
  if (!r.ok()) return false;
  if (r->IsError()) {
    spdlog::warn("redis: handoff: {}", r->Str());
    return false;
  }
  // Not renewed or asked for again: the next heartbeat leaves them alone.
  for (uint32_t s : shards) {
    lease_state_[s] = LeaseState::kNone;
    epoch_[s] = 0;
    valid_until_[s] = 0;
  }
  my_shards_.erase(std::remove_if(my_shards_.begin(), my_shards_.end(),
                                  [&](uint32_t s) {
                                    return std::binary_search(shards.begin(),
                                                              shards.end(), s);
                                  }),
                   my_shards_.end());
  {
    MutexLock lock(mu_);
    for (uint32_t s : shards) {
      released_[s] = handoff_[s].sequence;
      handoff_.erase(s);
      holding_.erase(s);
      to_drop_.push_back(s);
    }
    handoff_work_ = true;
    figures_.leases_held -= std::min<uint64_t>(figures_.leases_held, shards.size());
    figures_.shards_owned = figures_.leases_held;
  }
  spdlog::info(
      "cluster: handed {} shards over (the last to node {}) in checkpoint {}: {} leases "
      "given up",
      shards.size(), to, sequence, r->Int());
  return true;
}

}  // namespace crawler::engine
