// The shards a cluster node wants and holds (tenure.h): the lease command,
// the heartbeat's lease replies as one round, expiry by this node's clock.
#include "cluster/membership/tenure.h"

#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>

#include "cluster/redis/cluster_wire.h"

namespace crawler::cluster {

using SteadyClock = std::chrono::steady_clock;
using cluster_wire::kAckScript;
using cluster_wire::ParseStreamId;
using cluster_wire::StreamId;

namespace {
int64_t NowNs() { return SteadyClock::now().time_since_epoch().count(); }
}  // namespace

Tenure::Tenure(std::string node, uint32_t shards, std::chrono::milliseconds ttl,
               bool takeover)
    : node_(std::move(node)), takeover_(takeover), leases_(node_, shards, ttl) {}

bool Tenure::Valid(uint32_t shard) const { return leases_.Valid(shard, NowNs()); }
bool Tenure::Lapsed(uint32_t shard) const { return leases_.Lapsed(shard, NowNs()); }

std::map<uint32_t, std::string> Tenure::GiveUp(const std::vector<uint32_t>& shards) {
  std::map<uint32_t, std::string> tokens;
  for (uint32_t s : shards) {
    tokens[s] = leases_.Token(s);
    leases_.GiveUp(s);
  }
  wanted_.erase(std::remove_if(wanted_.begin(), wanted_.end(),
                               [&](uint32_t s) { return tokens.count(s) > 0; }),
                wanted_.end());
  MutexLock lock(mu_);
  for (uint32_t s : shards) holding_.erase(s);
  return tokens;
}

std::vector<std::string> Tenure::Command(
    const std::function<std::string(const std::string&)>& key) const {
  std::vector<std::string> cmd = {"EVAL", cluster_wire::kLeaseScript,
                                  std::to_string(2 * wanted_.size() + 6)};
  for (uint32_t s : wanted_) cmd.push_back(key("lease:" + std::to_string(s)));
  for (uint32_t s : wanted_) cmd.push_back(key("epoch:" + std::to_string(s)));
  for (const char* k : {"holder", "source", "state", "holds", "busy", "source_prev"})
    cmd.push_back(key(k));
  cmd.push_back(node_);
  cmd.push_back(std::to_string(leases_.ttl().count()));
  cmd.push_back(takeover_ ? "1" : "0");  // with shared_dir: a dead node's shards
  for (uint32_t s : wanted_) cmd.push_back(std::to_string(leases_.epoch(s)));
  return cmd;
}

void Tenure::ShardList::Add(uint32_t shard, uint64_t epoch) {
  if (n_++ < 32)
    text_ += (text_.empty() ? "" : ", ") + fmt::format("{} (epoch {})", shard, epoch);
}

std::string Tenure::ShardList::str() const {
  return text_ + (n_ > 32 ? fmt::format(" and {} more", n_ - 32) : std::string());
}

std::optional<Tenure::Round> Tenure::Apply(ReplyView r, SteadyClock::time_point sent,
                                           std::atomic<bool>* ready,
                                           const Gained& gained) {
  if (!r.array() || r.size() != wanted_.size()) return std::nullopt;
  const int64_t until = leases_.UntilOf(sent);
  Round round;
  for (size_t i = 0; i < wanted_.size(); ++i) {
    const uint32_t s = wanted_[i];
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
    // Every taking increments the epoch: the next one after this node's
    // means nobody else held the shard meanwhile.
    if (o.again && was > 0 && reply.epoch == was + 1)
      round.taken_again.emplace_back(s, reply.epoch);
    if (o.renewed) round.renewed.Add(s, reply.epoch);
    if (o.gained) gained(s, reply, &round);
    if (o.held) {
      ++round.held;
      continue;
    }
    ready[s] = false;
    if (!o.lost) continue;
    round.lost.Add(s, reply.epoch);
    if (round.lost_to.empty())
      round.lost_to = (reply.state == "other" ? "held by '" : "free, last held by '") +
                      reply.holder + "'";
  }
  Log(round);
  MutexLock lock(mu_);
  holding_.clear();
  for (uint32_t s : wanted_)
    if (leases_.Holds(s)) holding_[s] = leases_.epoch(s);
  return round;
}

void Tenure::Log(const Round& round) const {
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
  if (!round.lost.empty())
    spdlog::warn(
        "cluster: leases of {} shards lost (the first {}): {}; not fetching their "
        "hosts, not reading or acknowledging their streams",
        round.lost.size(), round.lost_to, round.lost.str());
}

size_t Tenure::Expire() {
  const std::vector<uint32_t> expired = leases_.Expire(wanted_, NowNs());
  if (expired.empty()) return 0;
  ShardList list;
  for (uint32_t s : expired) list.Add(s, leases_.epoch(s));
  spdlog::warn(
      "cluster: leases of {} shards expired (not renewed for {:.1f} s): {}; not fetching "
      "their hosts until they are",
      expired.size(), std::chrono::duration<double>(leases_.ttl()).count(), list.str());
  return expired.size();
}

std::map<uint32_t, uint64_t> Tenure::Holding() const {
  MutexLock lock(mu_);
  return holding_;
}

Tenure::Acked Tenure::Acknowledge(
    Redis& redis, std::vector<StreamEntry> acks,
    const std::function<bool(uint32_t)>& released,
    const std::function<std::string(const std::string&)>& key) {
  Acked out;
  std::vector<StreamEntry>& keep = out.keep;
  std::map<uint32_t, std::vector<std::string>> by_shard;
  for (StreamEntry& a : acks) {
    if (leases_.epoch(a.shard) == 0 && released(a.shard)) {
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
        key("s:" + std::to_string(shard)),
        key("lease:" + std::to_string(shard)),
        leases_.Token(shard),
        std::to_string(newest.first) + "-" + std::to_string(newest.second + 1)};
    cmd.insert(cmd.end(), ids.begin(), ids.end());
    cmds.push_back(std::move(cmd));
  }
  auto replies = cmds.empty() ? Result<std::vector<RedisReply>>(std::vector<RedisReply>())
                              : redis.Pipeline(cmds);
  if (replies.ok()) {
    size_t i = 0;
    for (auto& [shard, ids] : by_shard) {
      const RedisReply& r = (*replies)[i++];
      const std::string verdict = r[0].str();
      if (verdict == "ok") continue;
      if (verdict == "fenced") {
        ++out.fenced;
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
  out.ok = replies.ok();
  return out;
}

}  // namespace crawler::cluster
