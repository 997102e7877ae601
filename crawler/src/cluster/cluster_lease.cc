// Leases and fencing of a cluster node (see cluster.h): taking and renewing
// the owned shards' leases, noticing one expire, and the fenced acknowledge
// and trim of the shards' streams.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "cluster/cluster.h"
#include "cluster/cluster_wire.h"

namespace crawler::engine {

using namespace cluster_wire;  // NOLINT: the formats this file speaks

std::vector<std::string> Cluster::LeaseCommand() const {
  std::vector<std::string> cmd = {"EVAL", kLeaseScript,
                                  std::to_string(2 * my_shards_.size() + 5)};
  for (uint32_t s : my_shards_) cmd.push_back(Key("lease:" + std::to_string(s)));
  for (uint32_t s : my_shards_) cmd.push_back(Key("epoch:" + std::to_string(s)));
  cmd.push_back(Key("holder"));
  cmd.push_back(Key("source"));
  cmd.push_back(Key("state"));
  cmd.push_back(Key("holds"));
  cmd.push_back(Key("busy"));
  cmd.push_back(cfg_.node);
  cmd.push_back(std::to_string(lease_ttl_.count()));
  cmd.push_back(takeover_ ? "1" : "0");  // with shared_dir: a dead node's shards
  for (uint32_t s : my_shards_) cmd.push_back(std::to_string(epoch_[s]));
  return cmd;
}

namespace {

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

}  // namespace

// Long: one pass over the lease replies, logged as one line; issue 31 splits it.
// NOLINTNEXTLINE(readability-function-size)
void Cluster::ApplyLeases(const redisReply* r, SteadyClock::time_point sent) {
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements != my_shards_.size())
    return;
  // Redis counts the TTL from when it ran the script, after `sent`: by this
  // node's clock the lease is surely ours until sent + TTL (less 1% for the
  // two clocks' rates).
  int64_t until = (sent + lease_ttl_ - lease_ttl_ / 100).time_since_epoch().count();
  uint64_t held = 0;
  ShardList unnoticed, again, renewed, lost, takeovers;
  std::string lost_to, took_from;
  for (size_t i = 0; i < my_shards_.size(); ++i) {
    uint32_t s = my_shards_[i];
    std::string state = RedisReply::StrOf(Element(r->element[i], 0));
    std::string epoch_text = RedisReply::StrOf(Element(r->element[i], 1));
    std::string holder = RedisReply::StrOf(Element(r->element[i], 2));
    std::string source = RedisReply::StrOf(Element(r->element[i], 3));
    uint64_t epoch = 0;
    std::from_chars(epoch_text.data(), epoch_text.data() + epoch_text.size(), epoch);
    if (state == "held" || state == "taken") {
      // Taken while this node thought it held it: paused between two rounds,
      // it expired before this node noticed.
      if (state == "taken" && lease_state_[s] == LeaseState::kHeld)
        unnoticed.Add(s, epoch_[s]);
      if (state == "taken" && lease_state_[s] != LeaseState::kNone) {
        again.Add(s, epoch);
      } else if (lease_state_[s] == LeaseState::kExpired) {
        renewed.Add(s, epoch);
      }
      if (lease_state_[s] == LeaseState::kNone || lease_state_[s] == LeaseState::kLost) {
        // Newly this process's: its state is here already (a new shard, or
        // the checkpoint this node resumed from holds it: it is the shard's
        // source, as every commit makes itself of the shards it holds), or
        // it is loaded from its source. A shard this node gave up (handoff)
        // and takes back is loaded from that checkpoint too: its queue was
        // dropped here, and a checkpoint cut since does not hold it, even if
        // it still lists some of its hosts (the chaos test lost 553 URLs
        // when a node killed between handoff and takeover came back and took
        // its released shards as empty ones).
        std::string from = source.substr(0, source.find(' '));
        bool resumed_here =
            own_ && source == resumed_source_ &&
            std::binary_search(resumed_shards_.begin(), resumed_shards_.end(), s);
        if (takeover_ && !source.empty() &&
            (from != cfg_.node || Released(s) || !resumed_here)) {
          to_load_[s] = source;
          takeovers.Add(s, epoch);
          if (took_from.empty()) took_from = source;
        } else if (resumed_here) {
          restore_own_.push_back(s);  // a resumed node's: owned once restored
        } else {
          ready_[s] = true;
        }
      }
      epoch_[s] = epoch;
      lease_state_[s] = LeaseState::kHeld;
      valid_until_[s] = until;
      ++held;
      continue;
    }
    valid_until_[s] = 0;
    epoch_[s] = 0;
    ready_[s] = false;
    if (lease_state_[s] == LeaseState::kHeld || lease_state_[s] == LeaseState::kExpired) {
      if (lease_state_[s] == LeaseState::kHeld) unnoticed.Add(s, epoch);
      // Lapsed for good (Lapsed(): a time long past), not "never held" (0):
      // nothing of its hosts is fetched in the moment before this node
      // stops. A robots.txt retry went out to a lost host then, 10 ms from
      // its new owner's request (the partition test, in CI).
      valid_until_[s] = 1;
      lost.Add(s, epoch);
      if (lost_to.empty())
        lost_to =
            (state == "other" ? "held by '" : "free, last held by '") + holder + "'";
      lease_state_[s] = LeaseState::kLost;
    }
  }
  if (!unnoticed.empty())
    spdlog::warn("cluster: leases of {} shards had expired unnoticed: {}",
                 unnoticed.size(), unnoticed.str());
  if (!again.empty())
    spdlog::info(
        "cluster: leases of {} shards taken again (nobody held them meanwhile): {}",
        again.size(), again.str());
  if (!renewed.empty())
    spdlog::info("cluster: leases of {} shards renewed; fetching their hosts again: {}",
                 renewed.size(), renewed.str());
  if (!takeovers.empty())
    spdlog::info("cluster: taking over {} shards (the first from checkpoint '{}'): {}",
                 takeovers.size(), took_from, takeovers.str());
  {
    MutexLock lock(mu_);
    figures_.leases_held = held;
    figures_.shards_owned = held;
    figures_.lease_losses += unnoticed.size();
    holding_.clear();
    for (uint32_t s : my_shards_) {
      if (lease_state_[s] == LeaseState::kHeld || lease_state_[s] == LeaseState::kExpired)
        holding_[s] = epoch_[s];
    }
  }
  if (!lost.empty()) {
    spdlog::warn(
        "cluster: leases of {} shards lost (the first {}): {}; not fetching their hosts, "
        "not reading or acknowledging their streams",
        lost.size(), lost_to, lost.str());
    // Another node has them, from this node's last committed checkpoint:
    // what this process did since is void.
    fenced_ = true;
    Fail("lease renewal refused: " + std::to_string(lost.size()) +
         " shards this node held were taken by another node (the first " + lost_to +
         ") while it was paused or cut off; its work since its last committed " +
         "checkpoint is void (the new owners redo it from there)");
  }
}

void Cluster::CheckLeaseExpiry() {
  int64_t now = SteadyClock::now().time_since_epoch().count();
  ShardList expired;
  for (uint32_t s : my_shards_) {
    if (lease_state_[s] != LeaseState::kHeld || valid_until_[s].load() > now) continue;
    lease_state_[s] = LeaseState::kExpired;
    expired.Add(s, epoch_[s]);
  }
  if (expired.empty()) return;
  spdlog::warn(
      "cluster: leases of {} shards expired (not renewed for {:.1f} s): {}; not fetching "
      "their hosts until they are",
      expired.size(), std::chrono::duration<double>(lease_ttl_).count(), expired.str());
  MutexLock lock(mu_);
  figures_.leases_held -= std::min<uint64_t>(figures_.leases_held, expired.size());
  figures_.lease_losses += expired.size();
}

// Acknowledges what published checkpoints hold and trims the streams, one
// fenced script per shard. Acks of a shard whose lease this node does not
// hold wait (for a lease taken again); Redis refuses those of an epoch it no
// longer has.
bool Cluster::AckPublished() {
  std::vector<Applied> acks;
  {
    MutexLock lock(mu_);
    acks.swap(to_ack_);
  }
  if (acks.empty()) return true;
  std::map<uint32_t, std::vector<std::string>> by_shard;
  std::vector<Applied> keep;
  for (Applied& a : acks) {
    if (epoch_[a.shard] == 0 && Released(a.shard)) {
      continue;  // handed over: its new owner claims what is still pending
    } else if (epoch_[a.shard] == 0) {
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
        cfg_.node + " " + std::to_string(epoch_[shard]),
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
      std::string verdict = RedisReply::StrOf(Element(r.raw(), 0));
      if (verdict == "ok") continue;
      if (verdict == "fenced") {
        ++fenced;
        spdlog::warn(
            "cluster: shard {}: acknowledge and trim refused by Redis (fenced): this "
            "node's lease is epoch {}, the shard's lease is '{}'",
            shard, epoch_[shard], RedisReply::StrOf(Element(r.raw(), 1)));
        // The next heartbeat, with this epoch, tells: taken again (it only
        // expired) or lost to another node. Lapsed meanwhile (1, as lost).
        valid_until_[shard] = 1;
        if (lease_state_[shard] == LeaseState::kHeld)
          lease_state_[shard] = LeaseState::kExpired;
      } else {
        spdlog::warn("redis: acknowledge of shard {}: {}", shard, r.Str());
      }
      for (std::string& id : ids) keep.push_back(Applied{shard, std::move(id)});
    }
  } else {
    for (auto& [shard, ids] : by_shard)
      for (std::string& id : ids) keep.push_back(Applied{shard, std::move(id)});
  }
  MutexLock lock(mu_);
  figures_.acks_fenced += fenced;
  for (Applied& a : keep) to_ack_.push_back(std::move(a));
  return replies.ok();
}

}  // namespace crawler::engine
