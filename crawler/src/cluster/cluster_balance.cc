// Placement of shards on the live nodes (see cluster.h, Ownership, and
// balance.h): the placement (shard_owners.h), overridden by the hash assign,
// which a busy node writes when it gives shards to the least loaded one; the
// heartbeat's read of the members and of assign, and its load.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "cluster/cluster.h"
#include "cluster/cluster_wire.h"
#include "cluster/give_script.h"
#include "frontier/frontier.h"

namespace crawler::engine {

using namespace cluster_wire;  // NOLINT: the formats this file speaks

std::vector<std::string> Cluster::MembersCommand() const {
  // The least loaded node is looked for only by a busy node that may give.
  const bool want_taker = cfg_.balance && backlog_ != nullptr && members_.busy();
  return {"EVAL",
          kMembersScript,
          "4",
          Key("nodes"),
          Key("assign_v"),
          Key("assign"),
          Key("load"),
          Key("alive:"),
          owners_.version().empty() ? "-" : owners_.version(),
          want_taker ? "1" : "0",
          cfg_.node,
          Key("reserve:")};
}

void Cluster::Members(const redisReply* r) {
  // The node set grows when a node joins a running job.
  const redisReply* all = Element(r, 0);
  const redisReply* alive = Element(r, 1);
  const redisReply* version = Element(r, 2);
  const redisReply* assign = Element(r, 3);
  const redisReply* least = Element(r, 4);
  std::vector<std::string> nodes, live;
  for (size_t i = 0; all != nullptr && i < all->elements; ++i)
    nodes.push_back(RedisReply::StrOf(all->element[i]));
  for (size_t i = 0; alive != nullptr && i < alive->elements; ++i)
    live.push_back(RedisReply::StrOf(alive->element[i]));
  members_.SetNodes(std::move(nodes));
  if (version != nullptr && assign != nullptr && assign->type == REDIS_REPLY_ARRAY) {
    std::vector<std::pair<std::string, std::string>> pairs;
    for (size_t i = 0; i + 1 < assign->elements; i += 2)
      pairs.emplace_back(RedisReply::StrOf(assign->element[i]),
                         RedisReply::StrOf(assign->element[i + 1]));
    owners_.Read(pairs, RedisReply::StrOf(version));
  }
  {
    MutexLock lock(mu_);
    figures_.nodes = members_.nodes().size();
  }
  Want(live);
  if (least != nullptr && least->type == REDIS_REPLY_ARRAY && least->elements == 2) {
    const std::string load = RedisReply::StrOf(least->element[1]);
    uint64_t queued = 0;
    std::from_chars(load.data(), load.data() + load.size(), queued);
    Balance(RedisReply::StrOf(least->element[0]), queued);
  }
}

bool Cluster::HeldBacklog(std::vector<ShardBacklog>* backlog) {
  std::map<uint32_t, uint64_t> by_shard;
  // The shards held here and ready (none being handed over).
  const bool looked = backlog_([&](std::string_view host, uint64_t queued) {
    const uint32_t s = ShardOf(host);
    if (ready_[s].load() && !handing_[s].load()) by_shard[s] += queued;
  });
  for (const auto& [s, queued] : by_shard)
    if (leases_.state(s) == Leases::State::kHeld) backlog->push_back({s, queued});
  return looked;
}

std::string Cluster::LoadToPublish() {
  if (!cfg_.balance || !takeover_ || backlog_ == nullptr) return "";
  // A node taking shards (a give, a handoff, a takeover) gets no more until
  // it holds them: its queue does not show them yet.
  if (failed_.load() || leave_.load() || beats_.taking()) return "-";
  if (!members_.busy()) return "0";
  if (continuous_) return "-";
  std::vector<ShardBacklog> backlog;
  if (!HeldBacklog(&backlog)) return "";
  uint64_t total = 0;
  for (const ShardBacklog& b : backlog) total += b.queued;
  return std::to_string(total);
}

void Cluster::Balance(const std::string& taker, uint64_t load) {
  if (!cfg_.balance || !takeover_ || backlog_ == nullptr || failed_.load() ||
      leave_.load())
    return;
  // One give at a time: the last one handed over and taken, then two
  // heartbeats more (the taker's backlog shows as its state by then).
  const auto now = SteadyClock::now();
  const auto beat = std::chrono::duration_cast<SteadyClock::duration>(
      std::chrono::duration<double>(cfg_.heartbeat_s));
  if (now - last_give_ < 2 * beat) return;
  {
    MutexLock lock(mu_);
    if (transfers_.Giving()) return;
  }
  double rate = 0;
  {
    MutexLock lock(mu_);
    rate = rate_.At(now, figures_.pages, figures_.pages_per_s);
  }
  std::vector<ShardBacklog> backlog;
  if (!HeldBacklog(&backlog)) return;
  BalanceRule rule;
  // A give lands about a heartbeat after it is made: the taker learns of
  // it at its next heartbeat, then (4x as often, Want) takes the leases.
  rule.min_s = std::max(rule.min_s, 2 * cfg_.heartbeat_s);
  const std::vector<uint32_t> give = ShardsToGive(backlog, rate, load, rule);
  if (give.empty()) return;
  const std::string& to = taker;
  std::map<uint32_t, uint64_t> queued;  // of the shards offered
  uint64_t urls = 0, total = 0, n = 0;
  for (const ShardBacklog& b : backlog) {
    total += b.queued;
    queued[b.shard] = b.queued;
  }
  std::vector<std::string> cmd = {"EVAL",
                                  kGiveScript,
                                  std::to_string(5 + give.size()),
                                  Key("assign"),
                                  Key("assign_v"),
                                  Key("reserve:" + to),
                                  Key("alive:" + to),
                                  Key("load")};
  for (uint32_t s : give) cmd.push_back(Key("lease:" + std::to_string(s)));
  cmd.push_back(to);
  cmd.push_back(std::to_string(static_cast<int64_t>(cfg_.heartbeat_s * 5000)));
  cmd.push_back(std::to_string(MaxTakerLoad(total, rule)));
  for (uint32_t s : give) cmd.push_back(leases_.Token(s));
  auto r = redis_->Command(cmd);
  last_give_ = now;
  if (!r.ok() || redis_.Failed(*r, "balance")) return;
  for (size_t i = 0; r->raw() != nullptr && i < r->raw()->elements; ++i) {
    const std::string shard = RedisReply::StrOf(r->raw()->element[i]);
    uint32_t s = 0;
    auto [end, ec] = std::from_chars(shard.data(), shard.data() + shard.size(), s);
    if (ec != std::errc() || s >= cfg_.shards) continue;
    owners_.Give(s, to);  // as every node reads it at its next heartbeat
    urls += queued[s];
    ++n;
    HandTo(s, to);
  }
  if (n == 0) return;  // it was no longer idle, or another node gave first
  {
    MutexLock lock(mu_);
    figures_.shards_given += n;
  }
  spdlog::info(
      "cluster: balance: giving {} shards ({} queued URLs of this node's {}, ~{:.0f} s "
      "of work here) to node {} ({} queued there{})",
      n, urls, total, rate > 0 ? static_cast<double>(total) / rate : 0.0, to, load,
      load == 0 ? ": idle" : "");
}

void Cluster::TakenYet(const std::vector<uint32_t>& shards, const redisReply* holders) {
  MutexLock lock(mu_);
  for (size_t i = 0; i < shards.size(); ++i) {
    const redisReply* h = Element(holders, i);
    if (h == nullptr) return;
    transfers_.HolderIs(shards[i], RedisReply::StrOf(h));
  }
}

}  // namespace crawler::engine
