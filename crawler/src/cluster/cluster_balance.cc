// Placement of shards on the live nodes (see cluster.h, Ownership, and
// balance.h): rendezvous hashing, overridden by the hash assign, which a
// busy node writes when it gives shards to an idle one; the heartbeat's
// read of the members and of assign.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <random>

#include "cluster/cluster.h"
#include "cluster/cluster_wire.h"
#include "frontier/frontier.h"

namespace crawler::engine {

using namespace cluster_wire;  // NOLINT: the formats this file speaks

std::vector<std::string> Cluster::MembersCommand() const {
  // The idle nodes are listed only for a busy node that may give shards.
  const bool want_idle = cfg_.balance && backlog_ != nullptr && busy_;
  return {"EVAL",
          kMembersScript,
          "4",
          Key("nodes"),
          Key("assign_v"),
          Key("assign"),
          Key("busy"),
          Key("alive:"),
          owners_.version().empty() ? "-" : owners_.version(),
          want_idle ? "1" : "0"};
}

void Cluster::Members(const redisReply* r) {
  // The node set grows when a node joins a running job.
  const redisReply* all = Element(r, 0);
  const redisReply* alive = Element(r, 1);
  const redisReply* version = Element(r, 2);
  const redisReply* assign = Element(r, 3);
  const redisReply* idle = Element(r, 4);
  std::vector<std::string> nodes, live, idle_nodes;
  for (size_t i = 0; all != nullptr && i < all->elements; ++i)
    nodes.push_back(RedisReply::StrOf(all->element[i]));
  for (size_t i = 0; alive != nullptr && i < alive->elements; ++i)
    live.push_back(RedisReply::StrOf(alive->element[i]));
  for (size_t i = 0; idle != nullptr && i < idle->elements; ++i) {
    std::string n = RedisReply::StrOf(idle->element[i]);
    if (n != cfg_.node) idle_nodes.push_back(std::move(n));
  }
  if (!nodes.empty()) nodes_ = std::move(nodes);
  if (version != nullptr && assign != nullptr && assign->type == REDIS_REPLY_ARRAY) {
    std::vector<std::pair<std::string, std::string>> pairs;
    for (size_t i = 0; i + 1 < assign->elements; i += 2)
      pairs.emplace_back(RedisReply::StrOf(assign->element[i]),
                         RedisReply::StrOf(assign->element[i + 1]));
    owners_.Read(pairs, RedisReply::StrOf(version));
  }
  {
    MutexLock lock(mu_);
    figures_.nodes = nodes_.size();
  }
  Want(live);
  if (!idle_nodes.empty()) Balance(idle_nodes);
}

double Cluster::RecentRate(SteadyClock::time_point now) {
  double rate = 0;
  uint64_t pages = 0;
  {
    MutexLock lock(mu_);
    rate = figures_.pages_per_s;  // over the last minute
    pages = figures_.pages;
  }
  // The rate of the last 5 s or more, once known: the last minute's lags
  // behind a node whose rate fell (its fast hosts given away, the slow ones
  // left), and would have it keep a backlog of minutes.
  if (rate_at_ == SteadyClock::time_point{} || pages < rate_pages_) {
    rate_at_ = now;
    rate_pages_ = pages;
  } else if (now - rate_at_ >= std::chrono::seconds(5)) {
    recent_rate_ = static_cast<double>(pages - rate_pages_) /
                   std::chrono::duration<double>(now - rate_at_).count();
    rate_at_ = now;
    rate_pages_ = pages;
  }
  return recent_rate_ > 0 ? recent_rate_ : rate;
}

std::vector<ShardBacklog> Cluster::HeldBacklog() {
  std::map<uint32_t, uint64_t> by_shard;
  // The shards held here and ready (none being handed over).
  backlog_([&](std::string_view host, uint64_t queued) {
    const uint32_t s = ShardOf(host);
    if (ready_[s].load() && !handing_[s].load()) by_shard[s] += queued;
  });
  std::vector<ShardBacklog> backlog;
  for (const auto& [s, queued] : by_shard)
    if (leases_.state(s) == Leases::State::kHeld) backlog.push_back({s, queued});
  return backlog;
}

void Cluster::Balance(const std::vector<std::string>& idle) {
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
  const double rate = RecentRate(now);
  const std::vector<ShardBacklog> backlog = HeldBacklog();
  BalanceRule rule;
  // A give lands about a heartbeat after it is made: the taker learns of
  // it at its next heartbeat, then (4x as often, Want) takes the leases.
  rule.min_s = std::max(rule.min_s, 2 * cfg_.heartbeat_s);
  const std::vector<uint32_t> give = ShardsToGive(backlog, rate, rule);
  if (give.empty()) return;
  static thread_local std::mt19937 rng(std::random_device{}());
  const std::string& to = idle[rng() % idle.size()];
  std::vector<std::string> cmd = {"EVAL",
                                  kGiveScript,
                                  std::to_string(5 + give.size()),
                                  Key("assign"),
                                  Key("assign_v"),
                                  Key("reserve:" + to),
                                  Key("alive:" + to),
                                  Key("busy")};
  for (uint32_t s : give) cmd.push_back(Key("lease:" + std::to_string(s)));
  cmd.push_back(to);
  cmd.push_back(std::to_string(static_cast<int64_t>(cfg_.heartbeat_s * 5000)));
  for (uint32_t s : give) cmd.push_back(leases_.Token(s));
  auto r = redis_->Command(cmd);
  last_give_ = now;
  if (!r.ok() || ReplyFailed(*r, "balance")) return;
  std::map<uint32_t, uint64_t> queued;  // of the shards offered
  uint64_t urls = 0, total = 0, n = 0;
  for (const ShardBacklog& b : backlog) {
    total += b.queued;
    queued[b.shard] = b.queued;
  }
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
      "of work here) to idle node {}",
      n, urls, total, rate > 0 ? static_cast<double>(total) / rate : 0.0, to);
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
