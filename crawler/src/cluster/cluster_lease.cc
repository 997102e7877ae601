// Leases and fencing of a cluster node (see cluster.h): taking and renewing
// the owned shards' leases, noticing one expire, and the fenced acknowledge
// and trim of the shards' streams.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>

#include "cluster/cluster.h"
#include "cluster/cluster_wire.h"

namespace crawler::engine {

using namespace cluster_wire;  // NOLINT: the formats this file speaks

void Cluster::ApplyLeases(ReplyView r, SteadyClock::time_point sent) {
  const std::optional<Tenure::Round> round =
      tenure_.Apply(r, sent, ready_.get(),
                    [this](uint32_t s, const LeaseReply& reply, Tenure::Round* in) {
                      Gained(s, reply, in);
                    });
  if (!round) return;
  {
    MutexLock lock(mu_);
    figures_.leases_held = round->held;
    figures_.shards_owned = round->held;
    figures_.lease_losses += round->unnoticed.size();
  }
  if (round->lost.empty()) return;
  // Another node has them, from this node's last committed checkpoint: what
  // this process did since is void.
  fenced_ = true;
  Fail("lease renewal refused: " + std::to_string(round->lost.size()) +
       " shards this node held were taken by another node (the first " + round->lost_to +
       ") while it was paused or cut off; its work since its last " +
       "committed checkpoint is void (the new owners redo it from there)");
}

void Cluster::Gained(uint32_t s, const LeaseReply& reply, Tenure::Round* round) {
  given_[s] = false;  // this node's again: its queued URLs wait for it
  const Gain g =
      OnGained(s, reply, cfg_.node, takeover_, handoff_.Released(s), own_.resumed());
  switch (g.action) {
    case Gain::Action::kLoad:
      loads_.Want(s, g.source, g.prev);
      round->takeovers.Add(s, reply.epoch);
      if (round->took_from.empty()) round->took_from = g.source;
      break;
    case Gain::Action::kRestoreOwn: {
      own_.Restore(s);  // a resumed node's: owned once restored
      MutexLock lock(mu_);
      commits_.From(s, cfg_.node + " " + std::to_string(own_.from().sequence));
      break;
    }
    case Gain::Action::kReady: {
      ready_[s] = true;  // a new shard, or this node's own since it resumed
      MutexLock lock(mu_);
      commits_.Forget(s);
      break;
    }
  }
}

// Acknowledges what published checkpoints hold and trims the streams, one
// fenced script per shard. Acks of a shard whose lease this node does not
// hold wait (for a lease taken again); Redis refuses those of an epoch it no
// longer has.
bool Cluster::AckPublished() {
  std::vector<StreamEntry> acks = receiver_.TakeAcks();
  if (acks.empty()) return true;
  std::map<uint32_t, std::vector<std::string>> by_shard;
  std::vector<StreamEntry> keep;
  for (StreamEntry& a : acks) {
    if (tenure_.leases().epoch(a.shard) == 0 && handoff_.Released(a.shard)) {
      continue;  // handed over: its new owner claims what is still pending
    } else if (tenure_.leases().epoch(a.shard) == 0) {
      keep.push_back(std::move(a));
    } else {
      by_shard[a.shard].push_back(std::move(a.id));
    }
  }
  std::vector<std::vector<std::string>> cmds;
  for (auto& [shard, ids] : by_shard) {
    // With none left pending, every entry up to the newest acknowledged one
    // goes (MINID keeps IDs >= its argument: the next ID after it).
    StreamId newest{0, 0};
    for (const std::string& id : ids) newest = std::max(newest, ParseStreamId(id));
    std::vector<std::string> cmd = {
        "EVAL",
        kAckScript,
        "2",
        StreamKey(shard),
        Key("lease:" + std::to_string(shard)),
        tenure_.leases().Token(shard),
        std::to_string(newest.first) + "-" + std::to_string(newest.second + 1)};
    cmd.insert(cmd.end(), ids.begin(), ids.end());
    cmds.push_back(std::move(cmd));
  }
  auto replies = cmds.empty() ? Result<std::vector<RedisReply>>(std::vector<RedisReply>())
                              : redis_->Pipeline(cmds);
  uint64_t fenced = 0;
  if (replies.ok()) {
    size_t i = 0;
    for (auto& [shard, ids] : by_shard) {
      const RedisReply& r = (*replies)[i++];
      const std::string verdict = r[0].str();
      if (verdict == "ok") continue;
      if (verdict == "fenced") {
        ++fenced;
        spdlog::warn(
            "cluster: shard {}: acknowledge and trim refused by Redis (fenced): this "
            "node's lease is epoch {}, the shard's lease is '{}'",
            shard, tenure_.leases().epoch(shard), r[1].str());
        // The next heartbeat, with this epoch, tells: taken again (it only
        // expired) or lost to another node.
        tenure_.leases().Fenced(shard);
      } else {
        spdlog::warn("redis: acknowledge of shard {}: {}", shard, r.Str());
      }
      for (std::string& id : ids) keep.push_back(StreamEntry{shard, std::move(id)});
    }
  } else {
    for (auto& [shard, ids] : by_shard)
      for (std::string& id : ids) keep.push_back(StreamEntry{shard, std::move(id)});
  }
  receiver_.Retry(std::move(keep));
  MutexLock lock(mu_);
  figures_.acks_fenced += fenced;
  return replies.ok();
}

}  // namespace crawler::engine
