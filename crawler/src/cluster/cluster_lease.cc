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

std::vector<std::string> Cluster::LeaseCommand() const {
  std::vector<std::string> cmd = {"EVAL", kLeaseScript,
                                  std::to_string(2 * my_shards_.size() + 6)};
  for (uint32_t s : my_shards_) cmd.push_back(Key("lease:" + std::to_string(s)));
  for (uint32_t s : my_shards_) cmd.push_back(Key("epoch:" + std::to_string(s)));
  cmd.push_back(Key("holder"));
  cmd.push_back(Key("source"));
  cmd.push_back(Key("state"));
  cmd.push_back(Key("holds"));
  cmd.push_back(Key("busy"));
  cmd.push_back(Key("source_prev"));
  cmd.push_back(cfg_.node);
  cmd.push_back(std::to_string(leases_.ttl().count()));
  cmd.push_back(takeover_ ? "1" : "0");  // with shared_dir: a dead node's shards
  for (uint32_t s : my_shards_) cmd.push_back(std::to_string(leases_.epoch(s)));
  return cmd;
}

// The changes of one heartbeat's lease replies, for the log.
struct Cluster::LeaseRound {
  // "5, 15, 21 (epoch 1)": shards and their epochs, for one log line (the
  // first 32; a node may own hundreds).
  class ShardList {
   public:
    void Add(uint32_t shard, uint64_t epoch) {
      if (n_++ < 32)
        text_ += (text_.empty() ? "" : ", ") + fmt::format("{} (epoch {})", shard, epoch);
    }
    bool empty() const { return n_ == 0; }
    size_t size() const { return n_; }
    std::string str() const {
      return text_ + (n_ > 32 ? fmt::format(" and {} more", n_ - 32) : std::string());
    }

   private:
    size_t n_ = 0;
    std::string text_;
  };

  uint64_t held = 0;
  ShardList unnoticed, again, renewed, lost, takeovers;
  std::string lost_to, took_from;
};

void Cluster::ApplyLeases(ReplyView r, SteadyClock::time_point sent) {
  if (!r.array() || r.size() != my_shards_.size()) return;
  const int64_t until = leases_.UntilOf(sent);
  LeaseRound round;
  for (size_t i = 0; i < my_shards_.size(); ++i) {
    const uint32_t s = my_shards_[i];
    LeaseReply reply;
    const ReplyView one = r[i];
    reply.state = one[0].str();
    const std::string epoch = one[1].str();
    std::from_chars(epoch.data(), epoch.data() + epoch.size(), reply.epoch);
    reply.holder = one[2].str();
    reply.source = one[3].str();
    reply.source_prev = one[4].str();
    const uint64_t was = leases_.epoch(s);
    const Leases::Outcome o = leases_.Apply(s, reply, until);
    if (o.unnoticed) round.unnoticed.Add(s, o.held ? was : reply.epoch);
    if (o.again) round.again.Add(s, reply.epoch);
    if (o.renewed) round.renewed.Add(s, reply.epoch);
    if (o.gained) Gained(s, reply, &round);
    if (o.held) {
      ++round.held;
      continue;
    }
    ready_[s] = false;
    if (!o.lost) continue;
    round.lost.Add(s, reply.epoch);
    if (round.lost_to.empty())
      round.lost_to = (reply.state == "other" ? "held by '" : "free, last held by '") +
                      reply.holder + "'";
  }
  Report(round);
}

void Cluster::Gained(uint32_t s, const LeaseReply& reply, LeaseRound* round) {
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

void Cluster::Report(const LeaseRound& round) {
  if (!round.unnoticed.empty())
    spdlog::warn("cluster: leases of {} shards had expired unnoticed: {}",
                 round.unnoticed.size(), round.unnoticed.str());
  if (!round.again.empty())
    spdlog::info(
        "cluster: leases of {} shards taken again (nobody held them meanwhile): {}",
        round.again.size(), round.again.str());
  if (!round.renewed.empty())
    spdlog::info("cluster: leases of {} shards renewed; fetching their hosts again: {}",
                 round.renewed.size(), round.renewed.str());
  if (!round.takeovers.empty())
    spdlog::info("cluster: taking over {} shards (the first from checkpoint '{}'): {}",
                 round.takeovers.size(), round.took_from, round.takeovers.str());
  {
    MutexLock lock(mu_);
    figures_.leases_held = round.held;
    figures_.shards_owned = round.held;
    figures_.lease_losses += round.unnoticed.size();
    holding_.clear();
    for (uint32_t s : my_shards_)
      if (leases_.Holds(s)) holding_[s] = leases_.epoch(s);
  }
  if (round.lost.empty()) return;
  spdlog::warn(
      "cluster: leases of {} shards lost (the first {}): {}; not fetching their hosts, "
      "not reading or acknowledging their streams",
      round.lost.size(), round.lost_to, round.lost.str());
  // Another node has them, from this node's last committed checkpoint: what
  // this process did since is void.
  fenced_ = true;
  Fail("lease renewal refused: " + std::to_string(round.lost.size()) +
       " shards this node held were taken by another node (the first " + round.lost_to +
       ") while it was paused or cut off; its work since its last committed " +
       "checkpoint is void (the new owners redo it from there)");
}

void Cluster::CheckLeaseExpiry() {
  const std::vector<uint32_t> expired =
      leases_.Expire(my_shards_, SteadyClock::now().time_since_epoch().count());
  if (expired.empty()) return;
  LeaseRound::ShardList list;
  for (uint32_t s : expired) list.Add(s, leases_.epoch(s));
  spdlog::warn(
      "cluster: leases of {} shards expired (not renewed for {:.1f} s): {}; not fetching "
      "their hosts until they are",
      expired.size(), std::chrono::duration<double>(leases_.ttl()).count(), list.str());
  MutexLock lock(mu_);
  figures_.leases_held -= std::min<uint64_t>(figures_.leases_held, expired.size());
  figures_.lease_losses += expired.size();
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
    if (leases_.epoch(a.shard) == 0 && handoff_.Released(a.shard)) {
      continue;  // handed over: its new owner claims what is still pending
    } else if (leases_.epoch(a.shard) == 0) {
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
        leases_.Token(shard),
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
            shard, leases_.epoch(shard), r[1].str());
        // The next heartbeat, with this epoch, tells: taken again (it only
        // expired) or lost to another node.
        leases_.Fenced(shard);
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
