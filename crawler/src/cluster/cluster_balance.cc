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

void Cluster::Members(ReplyView r) {
  // The node set grows when a node joins a running job.
  const ReplyView version = r[2], assign = r[3], least = r[4];
  const std::vector<std::string> live = r[1].strings();
  members_.SetNodes(r[0].strings());
  if (!version.nil() && assign.array()) {
    std::vector<std::pair<std::string, std::string>> pairs;
    assign.ForEachPair([&](ReplyView shard, ReplyView node) {
      pairs.emplace_back(shard.str(), node.str());
    });
    owners_.Read(pairs, version.str());
  }
  {
    MutexLock lock(mu_);
    figures_.nodes = members_.nodes().size();
  }
  Want(live);
  if (least.size() == 2) {
    const std::string load = least[1].str();
    uint64_t queued = 0;
    std::from_chars(load.data(), load.data() + load.size(), queued);
    Balance(least[0].str(), queued);
  }
}

bool Cluster::HeldBacklog(std::vector<ShardBacklog>* backlog) {
  std::map<uint32_t, uint64_t> by_shard;
  // The shards held here and ready (none being handed over).
  const bool looked = backlog_([&](std::string_view host, uint64_t queued) {
    const uint32_t s = ShardOf(host);
    if (ready_[s].load() && !handoff_.Handing(s)) by_shard[s] += queued;
  });
  for (const auto& [s, queued] : by_shard)
    if (tenure_.leases().state(s) == Leases::State::kHeld)
      backlog->push_back({s, queued});
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
  if (handoff_.Giving()) return;
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
  for (uint32_t s : give) cmd.push_back(tenure_.leases().Token(s));
  auto r = redis_->Command(cmd);
  last_give_ = now;
  if (!r.ok() || redis_.Failed(*r, "balance")) return;
  for (const std::string& shard : r->view().strings()) {
    uint32_t s = 0;
    auto [end, ec] = std::from_chars(shard.data(), shard.data() + shard.size(), s);
    if (ec != std::errc() || s >= cfg_.shards) continue;
    owners_.Give(s, to);  // as every node reads it at its next heartbeat
    urls += queued[s];
    ++n;
    handoff_.HandTo(s, to);
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

}  // namespace crawler::engine
