// See balancer.h.
#include "cluster/handoff/balancer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "cluster/handoff/give_script.h"
#include "cluster/redis/cluster_wire.h"

namespace crawler::cluster {

using namespace cluster_wire;  // NOLINT: the formats this file speaks

Balancer::Balancer(const engine::ClusterConfig& cfg, Parts parts,
                   const std::vector<uint32_t>& weights, bool continuous)
    : cfg_(cfg), p_(parts), continuous_(continuous), owners_(cfg.shards) {
  owners_.SetWeights(weights);
}

std::vector<uint32_t> Balancer::Placed(const std::vector<std::string>& nodes) {
  std::vector<uint32_t> out;
  for (uint32_t s = 0; s < cfg_.shards; ++s)
    if (owners_.OwnerOf(nodes, s) == cfg_.node) out.push_back(s);
  return out;
}

void Balancer::Want(const std::vector<std::string>& live) {
  std::set<uint32_t> want;
  for (uint32_t s : p_.tenure.wanted()) {
    if (p_.tenure.leases().Holds(s)) want.insert(s);
  }
  if (std::find(live.begin(), live.end(), cfg_.node) != live.end()) {
    for (uint32_t s = 0; s < cfg_.shards; ++s) {
      const std::string& owner = owners_.OwnerOf(live, s);
      if (owner == cfg_.node) want.insert(s);
      // Held here, loaded, another live node's now (it joined, or came
      // back): handed over (or, if that node went away meanwhile, kept).
      if (want.count(s) > 0 && !p_.states.Loading(s) &&
          (p_.states.Ready(s) || p_.handoff.Handing(s)))
        p_.handoff.HandTo(s, owner);
    }
  }
  // Shards being loaded stay asked for (their lease is renewed meanwhile).
  for (const auto& [s, source] : p_.states.loading()) want.insert(s);
  p_.tenure.SetWanted({want.begin(), want.end()});
  std::set<uint32_t> unheld;
  for (uint32_t s : want)
    if (!p_.tenure.leases().Holds(s) && !p_.states.Loading(s)) unheld.insert(s);
  p_.beats.Unheld(std::move(unheld), SteadyClock::now());
}

std::vector<std::string> Balancer::MembersCommand() const {
  // The least loaded node is looked for only by a busy node that may give.
  const bool want_taker = cfg_.balance && backlog_ != nullptr && p_.members.busy();
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

void Balancer::Members(ReplyView r, const Crawl& crawl) {
  // The node set grows when a node joins a running job.
  const ReplyView version = r[2], assign = r[3], least = r[4];
  const std::vector<std::string> live = r[1].strings();
  p_.members.SetNodes(r[0].strings());
  if (!version.nil() && assign.array()) {
    std::vector<std::pair<std::string, std::string>> pairs;
    assign.ForEachPair([&](ReplyView shard, ReplyView node) {
      pairs.emplace_back(shard.str(), node.str());
    });
    owners_.Read(pairs, version.str());
  }
  Want(live);
  if (least.size() == 2) {
    const std::string load = least[1].str();
    uint64_t queued = 0;
    std::from_chars(load.data(), load.data() + load.size(), queued);
    Balance(least[0].str(), queued, crawl);
  }
}

void Balancer::Seen(const std::string& version) {
  // Without takeover the heartbeat reads no placement (version() stays "").
  if (!p_.states.takeover() || p_.members.nodes().empty() || owners_.version().empty() ||
      version.empty() || version == owners_.version() || version == soon_for_)
    return;
  soon_for_ = version;
  p_.beats.Soon();
}

bool Balancer::HeldBacklog(std::vector<ShardBacklog>* backlog) {
  std::map<uint32_t, ShardBacklog> by_shard;
  // The shards held here and ready (none being handed over). A host whose
  // robots.txt is being fetched pins its shard (its URLs still count: at a
  // crawl's start every host's are so): in a 6-node bench, 50 of 200 hosts
  // answer it 5xx three times (then are disallowed), and gives that held
  // such a shard took 2-5 s to hand over, one shard a checkpoint, with no
  // other give meanwhile.
  const bool looked = backlog_([&](std::string_view host, uint64_t queued, bool settled) {
    const uint32_t s = p_.states.ShardOf(host);
    if (!p_.states.Ready(s) || p_.handoff.Handing(s)) return;
    ShardBacklog& b = by_shard[s];
    b.shard = s;
    b.queued += queued;
    b.pinned = b.pinned || !settled;
  });
  for (const auto& [s, b] : by_shard)
    if (p_.tenure.leases().state(s) == Leases::State::kHeld) backlog->push_back(b);
  return looked;
}

std::string Balancer::LoadToPublish(bool may_give) {
  if (!cfg_.balance || !p_.states.takeover() || backlog_ == nullptr) return "";
  // A node taking shards (a give, a handoff, a takeover) gets no more until
  // it holds them: its queue does not show them yet.
  if (!may_give || p_.beats.taking()) return "-";
  // A node's first heartbeat can come before its first state: published
  // as idle ("0"), it drew a give of 514 URLs two seconds into a 6-node
  // bench run, given straight back (n1 had 1,289 queued), and that run took
  // 21.5 s where the others took 18.2-19.1.
  if (!p_.members.state_known()) return "-";
  if (!p_.members.busy()) return "0";
  if (continuous_) return "-";
  std::vector<ShardBacklog> backlog;
  if (!HeldBacklog(&backlog)) return "";
  uint64_t total = 0;
  for (const ShardBacklog& b : backlog) total += b.queued;
  return std::to_string(total);
}

void Balancer::Balance(const std::string& taker, uint64_t load, const Crawl& crawl) {
  if (!cfg_.balance || !p_.states.takeover() || backlog_ == nullptr || !crawl.may_give)
    return;
  // One give at a time: the last one handed over and taken, then a
  // heartbeat more. The taker is reserved for one heartbeat (the give
  // script's TTL, below): it leaves the load set while it takes the shards
  // (LoadToPublish), and its next load counts them. Two heartbeats and a
  // reservation of five kept the heaviest node of a 6-node bench run from
  // giving for 10 s: every less loaded node was reserved then
  // (BalanceRule::min_gap).
  const auto now = SteadyClock::now();
  const auto beat = std::chrono::duration_cast<SteadyClock::duration>(
      std::chrono::duration<double>(cfg_.heartbeat_s));
  if (now - last_give_ < beat) return;
  if (p_.handoff.Giving()) return;
  const double rate = rate_.At(now, crawl.pages, crawl.pages_per_s);
  std::vector<ShardBacklog> backlog;
  if (!HeldBacklog(&backlog)) return;
  BalanceRule rule;
  // A give lands about a quarter heartbeat after it is made: the taker
  // learns of it with its next read (Seen), then takes the leases at its
  // next heartbeat, 4x as often while it wants them (Want). 0.52-0.58 s
  // with 2 s heartbeats (6-node bench), 0.5-2.4 s when it learnt at its
  // next heartbeat.
  rule.min_s = std::max(rule.min_s, cfg_.heartbeat_s / 2);
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
  cmd.push_back(std::to_string(static_cast<int64_t>(cfg_.heartbeat_s * 1000)));
  cmd.push_back(std::to_string(MaxTakerLoad(total, rule)));
  for (uint32_t s : give) cmd.push_back(p_.tenure.leases().Token(s));
  auto r = p_.redis->Command(cmd);
  last_give_ = now;
  if (!r.ok() || p_.redis.Failed(*r, "balance")) return;
  for (const std::string& shard : r->view().strings()) {
    uint32_t s = 0;
    auto [end, ec] = std::from_chars(shard.data(), shard.data() + shard.size(), s);
    if (ec != std::errc() || s >= cfg_.shards) continue;
    owners_.Give(s, to);  // as every node reads it at its next heartbeat
    urls += queued[s];
    ++n;
    p_.handoff.HandTo(s, to);
  }
  if (n == 0) return;  // it was no longer idle, or another node gave first
  shards_given_ += n;
  spdlog::info(
      "cluster: balance: giving {} shards ({} queued URLs of this node's {}, ~{:.0f} s "
      "of work here) to node {} ({} queued there{})",
      n, urls, total, rate > 0 ? static_cast<double>(total) / rate : 0.0, to, load,
      load == 0 ? ": idle" : "");
}

}  // namespace crawler::cluster
