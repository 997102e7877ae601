// Handoff of shards between live cluster nodes (see cluster.h, HandoffWork):
// when a node joins a running job, or comes back, the shards rendezvous
// hashing now gives it are handed over by their holders: drained, cut into a
// committed checkpoint, given up, taken over from that checkpoint.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "base/file_util.h"
#include "cluster/cluster.h"
#include "cluster/cluster_wire.h"
#include "crawler/checkpoint.h"

namespace crawler::engine {

using namespace cluster_wire;  // NOLINT: the formats this file speaks

void Cluster::HandTo(uint32_t shard, const std::string& to) {
  MutexLock lock(mu_);
  if (to == cfg_.node) {
    // The newcomer went away before taking it: this node keeps it.
    const std::optional<std::string> was = transfers_.Cancel(shard);
    if (!was) return;
    spdlog::info("cluster: shard {} stays here (node {} went away before taking it)",
                 shard, *was);
    handing_[shard] = false;
    ready_[shard] = true;
    // Its pending entries are read again (Receiver::Claim): a shard restored or
    // taken over and handed at once was skipped when they were read (not
    // ready then), and entries delivered to this node's previous process
    // would stay pending forever: their URLs lost, and the stream's lag
    // (backpressure) stuck for every sender (a chaos run hung on it).
    receiver_.Claim(shard);
    handoff_work_ = transfers_.Work();
    return;
  }
  if (!transfers_.Begin(shard, to)) return;  // under way: only its destination changed
  // From now on its links go to its stream and its hosts wait.
  handing_[shard] = true;
  ready_[shard] = false;
  handoff_work_ = true;
  spdlog::info(
      "cluster: handing shard {} over to node {}: draining its fetches, then a "
      "checkpoint",
      shard, to);
}

std::vector<uint32_t> Cluster::Draining() {
  MutexLock lock(mu_);
  return transfers_.Draining(SteadyClock::now());
}

void Cluster::Drained(const std::vector<uint32_t>& shards) {
  MutexLock lock(mu_);
  transfers_.Drained(shards);
}

bool Cluster::CheckpointWanted() const {
  const int64_t now = SteadyClock::now().time_since_epoch().count();
  const int64_t beat = static_cast<int64_t>(cfg_.heartbeat_s * 3e9);
  bool full =
      now - full_seen_ns_.load() < beat && now - full_cut_ns_.load() > 2'000'000'000;
  MutexLock lock(mu_);
  // Redis full: entries read since the last cut, or cut but waiting for a
  // later commit to be acknowledged (AfterCommit), free Redis's memory only
  // through checkpoints.
  if (full && receiver_.AwaitingCut()) {
    full_cut_ns_ = now;
    return true;
  }
  return transfers_.CutWanted();
}

bool Cluster::HoldCuts() const {
  MutexLock lock(mu_);
  // A handoff's checkpoint is cut: no other until HandOver has kept it in
  // OUT/handoff/SEQ/ (right after its commit; it waits on nothing else).
  return transfers_.HoldCuts();
}

bool Cluster::Released(uint32_t shard) const {
  MutexLock lock(mu_);
  return transfers_.Released(shard);
}

bool Cluster::Handing(std::string_view url) const {
  return handing_[ShardOf(frontier::HostKey(url))].load();
}

std::vector<uint32_t> Cluster::TakeReleased() {
  MutexLock lock(mu_);
  return transfers_.TakeDrops();
}

void Cluster::Dropped(const std::vector<uint32_t>& shards, uint64_t urls) {
  MutexLock lock(mu_);
  // Nothing of theirs is read here any more (a shard taken back is read
  // again once loaded, when it is ready).
  transfers_.Dropped(shards);
  for (uint32_t s : shards) handing_[s] = false;
  handoff_work_ = transfers_.Work();
  spdlog::info("cluster: {} queued URLs of {} shards handed over dropped here", urls,
               shards.size());
}

void Cluster::PruneHandoffDirs(std::initializer_list<const redisReply*> hashes) {
  // Sequences of this node that are some shard's source (or source_prev).
  std::set<uint64_t> named;
  const std::string mine = cfg_.node + " ";
  for (const redisReply* sources : hashes) {
    for (size_t i = 1; sources != nullptr && sources->type == REDIS_REPLY_ARRAY &&
                       i < sources->elements;
         i += 2) {
      std::string v = RedisReply::StrOf(sources->element[i]);
      if (v.rfind(mine, 0) == 0)
        named.insert(std::strtoull(v.c_str() + mine.size(), nullptr, 10));
    }
  }
  kept_.Prune(named);
}

bool Cluster::SendReleases() {
  // Redis may apply a release and die before it replies: sent again until
  // one is confirmed. Each deletes a lease only while it is still this
  // node's with that epoch, so a second one is harmless.
  std::vector<std::pair<uint32_t, std::string>> leases;
  {
    MutexLock lock(mu_);
    leases = transfers_.ToRelease();
  }
  if (leases.empty()) return true;
  auto r = redis_->Command(members_.ReleaseCommand(leases));
  if (!r.ok()) return false;
  if (r->IsError()) {
    spdlog::warn("redis: handoff: {}", r->Str());
    return false;
  }
  spdlog::info("cluster: {} leases given up ({} shards handed over)", r->Int(),
               leases.size());
  MutexLock lock(mu_);
  transfers_.ReleasesSent(leases.size());
  return true;
}

bool Cluster::HandOver() {
  if (failed_.load()) return true;
  if (!SendReleases()) return false;
  std::map<uint64_t, std::vector<uint32_t>> by_sequence;
  std::string to;
  {
    MutexLock lock(mu_);
    by_sequence = transfers_.Committed(receiver_.committed(), &to);
  }
  for (auto& entry : by_sequence) {
    // Named, not bound: clang 14 does not capture structured bindings.
    const uint64_t sequence = entry.first;
    const std::vector<uint32_t>& shards = entry.second;
    // The committed checkpoint that holds them stays readable for their new
    // owner (and any later taker) in OUT/handoff/SEQ/, while this node goes
    // on cutting.
    Status kept = kept_.Keep(sequence);
    if (!kept.ok()) {
      // Held (no cuts meanwhile: HoldCuts) and tried again next round.
      if (keep_warn_.Due(SteadyClock::now())) {
        spdlog::warn("cluster: cannot keep handoff checkpoint {}: {}; trying again",
                     sequence, kept.message());
      }
      return true;
    }
    // Given up here first: not renewed, not asked for, in no later cut; its
    // queued URLs dropped by a worker. Then the lease (above, next round).
    std::map<uint32_t, std::string> given_up;
    for (uint32_t s : shards) {
      given_up[s] = leases_.Token(s);
      leases_.GiveUp(s);
    }
    my_shards_.erase(std::remove_if(my_shards_.begin(), my_shards_.end(),
                                    [&](uint32_t s) {
                                      return std::find(shards.begin(), shards.end(), s) !=
                                             shards.end();
                                    }),
                     my_shards_.end());
    {
      MutexLock lock(mu_);
      for (uint32_t s : shards) {
        transfers_.GaveUp(s, sequence, given_up[s]);
        holding_.erase(s);
        commits_.GaveUp(s);
      }
      handoff_work_ = true;
      figures_.leases_held -= std::min<uint64_t>(figures_.leases_held, shards.size());
      figures_.shards_owned = figures_.leases_held;
    }
    spdlog::info(
        "cluster: handed {} shards over (the last to node {}) in checkpoint {} (kept in "
        "{}/{})",
        shards.size(), to, sequence, kHandoffDir, sequence);
  }
  // The leases: now, else at the next rounds.
  return SendReleases();
}

}  // namespace crawler::engine
