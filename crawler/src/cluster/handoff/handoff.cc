// Handoff of shards between live cluster nodes (handoff.h): when a node joins
// a running job, or comes back, or balancing gives it shards, their holder
// drains them, cuts them into a committed checkpoint, gives them up, and the
// new owner takes them over from that checkpoint.
#include "cluster/handoff/handoff.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <set>

#include "cluster/redis/cluster_wire.h"

namespace crawler::cluster {

using cluster_wire::SteadyClock;

Handoffs::Handoffs(std::string node, uint32_t shards, const std::string& out_dir,
                   std::atomic<bool>* ready, Receiver& receiver)
    : node_(std::move(node)),
      ready_(ready),
      receiver_(receiver),
      handing_(new std::atomic<bool>[shards]),
      kept_(out_dir) {
  for (uint32_t s = 0; s < shards; ++s) handing_[s] = false;
}

void Handoffs::HandTo(uint32_t shard, const std::string& to) {
  if (to == node_) {
    std::optional<std::string> was;
    {
      MutexLock lock(mu_);
      // The newcomer went away before taking it: this node keeps it.
      was = transfers_.Cancel(shard);
      if (!was) return;
      handing_[shard] = false;
      ready_[shard] = true;
      work_ = transfers_.Work();
    }
    spdlog::info("cluster: shard {} stays here (node {} went away before taking it)",
                 shard, *was);
    // Its pending entries are read again (Receiver::Claim): a shard restored or
    // taken over and handed at once was skipped when they were read (not
    // ready then), and entries delivered to this node's previous process
    // would stay pending forever: their URLs lost, and the stream's lag
    // (backpressure) stuck for every sender (a chaos run hung on it).
    receiver_.Claim(shard);
    return;
  }
  {
    MutexLock lock(mu_);
    if (!transfers_.Begin(shard, to)) return;  // under way: only its destination changed
    // From now on its links go to its stream and its hosts wait.
    handing_[shard] = true;
    ready_[shard] = false;
    work_ = true;
  }
  spdlog::info(
      "cluster: handing shard {} over to node {}: draining its fetches, then a "
      "checkpoint",
      shard, to);
}

std::vector<uint32_t> Handoffs::Draining() {
  MutexLock lock(mu_);
  return transfers_.Draining(SteadyClock::now());
}

void Handoffs::Drained(const std::vector<uint32_t>& shards) {
  MutexLock lock(mu_);
  transfers_.Drained(shards);
}

bool Handoffs::CutWanted() const {
  MutexLock lock(mu_);
  return transfers_.CutWanted();
}

bool Handoffs::HoldCuts() const {
  MutexLock lock(mu_);
  // A handoff's checkpoint is cut: no other until HandOver has kept it in
  // OUT/handoff/SEQ/ (right after its commit; it waits on nothing else).
  return transfers_.HoldCuts();
}

void Handoffs::Cut(uint64_t sequence) {
  MutexLock lock(mu_);
  transfers_.Cut(sequence);
}

bool Handoffs::BeingHanded(uint32_t shard) const {
  MutexLock lock(mu_);
  return transfers_.Handing(shard);
}

bool Handoffs::Released(uint32_t shard) const {
  MutexLock lock(mu_);
  return transfers_.Released(shard);
}

bool Handoffs::Dropping(uint32_t shard) const {
  MutexLock lock(mu_);
  return transfers_.Dropping(shard);
}

bool Handoffs::Giving() const {
  MutexLock lock(mu_);
  return transfers_.Giving();
}

bool Handoffs::Quiet() const {
  MutexLock lock(mu_);
  return transfers_.Quiet();
}

void Handoffs::TakenBack(uint32_t shard) {
  MutexLock lock(mu_);
  transfers_.TakenBack(shard);
}

std::vector<uint32_t> Handoffs::TakeDrops() {
  MutexLock lock(mu_);
  return transfers_.TakeDrops();
}

void Handoffs::Dropped(const std::vector<uint32_t>& shards, uint64_t urls) {
  {
    MutexLock lock(mu_);
    // Nothing of theirs is read here any more (a shard taken back is read
    // again once loaded, when it is ready).
    transfers_.Dropped(shards);
    for (uint32_t s : shards) handing_[s] = false;
    work_ = transfers_.Work();
  }
  spdlog::info("cluster: {} queued URLs of {} shards handed over dropped here", urls,
               shards.size());
}

Handoffs::Asked Handoffs::Ask(const std::function<std::string(const std::string&)>& key,
                              std::vector<std::vector<std::string>>* cmds) {
  Asked asked;
  asked.kept = !kept_.empty();
  asked.at = cmds->size();
  {
    MutexLock lock(mu_);
    asked.released = transfers_.ReleasedShards();
    asked.untaken = transfers_.UntakenShards();
  }
  // Shards given up: has their source moved on (their new owner committed)?
  // Has their new owner taken the lease yet? Kept handoff checkpoints: does
  // some shard's source still name one?
  if (!asked.released.empty()) {
    cmds->push_back({"HMGET", key("source")});
    for (uint32_t s : asked.released) cmds->back().push_back(std::to_string(s));
  }
  if (!asked.untaken.empty()) {
    cmds->push_back({"HMGET", key("holder")});
    for (uint32_t s : asked.untaken) cmds->back().push_back(std::to_string(s));
  }
  if (asked.kept)
    cmds->insert(cmds->end(),
                 {{"HGETALL", key("source")}, {"HGETALL", key("source_prev")}});
  return asked;
}

void Handoffs::Answers(const Asked& asked, const std::vector<RedisReply>& replies) {
  size_t at = asked.at;
  const ReplyView sources = asked.released.empty() ? ReplyView() : replies[at++].view();
  const RedisReply* holders = asked.untaken.empty() ? nullptr : &replies[at++];
  {
    MutexLock lock(mu_);
    for (size_t i = 0; i < sources.size() && i < asked.released.size(); ++i)
      transfers_.SourceIs(asked.released[i], sources[i].str(), node_);
    for (size_t i = 0; holders != nullptr && !holders->IsError() &&
                       i < asked.untaken.size() && i < holders->view().size();
         ++i)
      transfers_.HolderIs(asked.untaken[i], (*holders)[i].str());
  }
  if (!asked.kept || replies[at].IsError() || replies[at + 1].IsError()) return;
  // Sequences of this node that are some shard's source (or source_prev).
  std::set<uint64_t> named;
  const std::string mine = node_ + " ";
  for (const ReplyView hash : {replies[at].view(), replies[at + 1].view()}) {
    hash.ForEachPair([&](ReplyView, ReplyView source) {
      const std::string v = source.str();
      if (v.rfind(mine, 0) == 0)
        named.insert(std::strtoull(v.c_str() + mine.size(), nullptr, 10));
    });
  }
  kept_.Prune(named);
}

bool Handoffs::SendReleases(Redis& redis, const Membership& members) {
  // Redis may apply a release and die before it replies: sent again until
  // one is confirmed. Each deletes a lease only while it is still this
  // node's with that epoch, so a second one is harmless.
  std::vector<std::pair<uint32_t, std::string>> leases;
  {
    MutexLock lock(mu_);
    leases = transfers_.ToRelease();
  }
  if (leases.empty()) return true;
  auto r = redis.Command(members.ReleaseCommand(leases));
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

void Handoffs::GaveUp(uint32_t shard, uint64_t sequence, const std::string& lease) {
  MutexLock lock(mu_);
  transfers_.GaveUp(shard, sequence, lease);
  work_ = true;
}

bool Handoffs::HandOver(Redis& redis, const Membership& members, uint64_t committed,
                        const GiveUp& give_up) {
  if (!SendReleases(redis, members)) return false;
  std::map<uint64_t, std::vector<uint32_t>> by_sequence;
  std::string to;
  {
    MutexLock lock(mu_);
    by_sequence = transfers_.Committed(committed, &to);
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
    give_up(sequence, shards);
    spdlog::info(
        "cluster: handed {} shards over (the last to node {}) in checkpoint {} (kept in "
        "{}/{})",
        shards.size(), to, sequence, cluster_wire::kHandoffDir, sequence);
  }
  // The leases: now, else at the next rounds.
  return SendReleases(redis, members);
}

}  // namespace crawler::cluster
