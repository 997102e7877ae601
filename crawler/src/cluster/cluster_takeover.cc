// Death and leave of cluster nodes (see cluster.h): the shards a node wants,
// the fenced commit of its checkpoints, loading a dead or leaving node's
// shards from its last committed checkpoint (shard_loads.h), and giving
// leases up.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "base/file_util.h"
#include "cluster/cluster.h"
#include "cluster/cluster_wire.h"
#include "crawler/checkpoint.h"

namespace crawler::engine {

using namespace cluster_wire;  // NOLINT: the formats this file speaks

void Cluster::Want(const std::vector<std::string>& live) {
  std::set<uint32_t> want;
  for (uint32_t s : tenure_.wanted()) {
    if (tenure_.leases().Holds(s)) want.insert(s);
  }
  if (std::find(live.begin(), live.end(), cfg_.node) != live.end()) {
    for (uint32_t s = 0; s < cfg_.shards; ++s) {
      const std::string& owner = owners_.OwnerOf(live, s);
      if (owner == cfg_.node) want.insert(s);
      // Held here, loaded, another live node's now (it joined, or came
      // back): handed over (or, if that node went away meanwhile, kept).
      if (want.count(s) > 0 && !loads_.Wants(s) &&
          (ready_[s].load() || handoff_.Handing(s)))
        handoff_.HandTo(s, owner);
    }
  }
  // Shards being loaded stay asked for (their lease is renewed meanwhile).
  for (const auto& [s, source] : loads_.wanted()) want.insert(s);
  tenure_.SetWanted({want.begin(), want.end()});
  std::set<uint32_t> unheld;
  for (uint32_t s : want)
    if (!tenure_.leases().Holds(s) && !loads_.Wants(s)) unheld.insert(s);
  beats_.Unheld(std::move(unheld), SteadyClock::now());
}

void Cluster::Fail(const std::string& why) {
  Fail(Status::Error(Status::Code::kIoError, "cluster: " + why));
}

void Cluster::Fail(const Status& failure) {
  spdlog::error("{}", failure.message());
  MutexLock lock(mu_);
  if (failed_.exchange(true)) return;
  failure_ = failure;
}

Status Cluster::failure() const {
  MutexLock lock(mu_);
  return failure_;
}

std::optional<ShardState> Cluster::TakeShardState() { return loads_.Take(); }

void Cluster::ShardsLoaded(const std::vector<uint32_t>& shards) {
  MutexLock lock(mu_);
  for (uint32_t s : shards) {
    ready_[s] = true;
    receiver_.Claim(s);
    handoff_.TakenBack(s);  // given up once, taken back: this node's again
  }
}

Result<std::string> Cluster::OutDirOf(const std::string& node) {
  auto rel = redis_->Command({"HGET", Key("outdirs"), node});
  if (!rel.ok()) return rel.status();
  if (!rel->view().string())
    return Status::Error(Status::Code::kIoError,
                         "node '" + node + "' published no output directory");
  return cfg_.shared_dir + "/" + rel->Str();
}

void Cluster::LoadTaken() {
  // A shard this node gave up and took back waits until a worker has
  // dropped what it had.
  auto done = loads_.Step([this](const std::string& node) { return OutDirOf(node); },
                          [this](uint32_t s) { return handoff_.Dropping(s); },
                          SteadyClock::now());
  if (!done) return;
  MutexLock lock(mu_);
  for (uint32_t s : done->shards) commits_.From(s, done->from);
  ++figures_.shard_loads;
  if (done->urls >= figures_.biggest_load_urls) {
    figures_.biggest_load_s = done->seconds;
    figures_.biggest_load_urls = done->urls;
    figures_.biggest_load_end_unix = done->end_unix;
  }
}

bool Cluster::ClaimLoaded(bool* did) {
  return receiver_.ClaimAndRead(
      *redis_, [this](const std::vector<uint32_t>& shards) { return Readable(shards); },
      [this](uint32_t shard) { return tenure_.leases().Holds(shard); }, did);
}

bool Cluster::Commit() {
  // A node that lost shards to another (Fail) commits nothing more: a
  // checkpoint cut after ApplyLeases dropped the lost shards from Holding
  // would name none of them, pass the fence, and become what --resume
  // starts from, with pages the new owners fetch again (an ASan run of the
  // zombie test found 4 URLs twice that way).
  if (failed_.load()) return true;
  // Leases of shards handed over are given up before any later checkpoint
  // (which no longer holds them) is committed: Redis never shows this node
  // holding a shard its committed checkpoint lacks.
  if (!handoff_.SendReleases(*redis_, members_)) return false;
  std::optional<Commits::Request> req;
  uint64_t last = 0;
  {
    MutexLock lock(mu_);
    req = commits_.Next();
    last = commits_.committed();
  }
  if (!req) return true;
  std::vector<std::string> cmd = {"EVAL",
                                  kCommitScript,
                                  "4",
                                  Key("holder"),
                                  Key("source"),
                                  Key("commits"),
                                  Key("source_prev"),
                                  cfg_.node,
                                  std::to_string(req->sequence)};
  cmd.insert(cmd.end(), req->args.begin(), req->args.end());
  auto r = redis_->Command(cmd);
  if (!r.ok()) return false;
  if (redis_.Failed(*r, "commit")) return false;
  if ((*r)[0].str() == "fenced") {
    {
      MutexLock lock(mu_);
      ++figures_.acks_fenced;
      commits_.Refused(*req);  // not again
    }
    fenced_ = true;
    Fail("the commit of checkpoint " + std::to_string(req->sequence) +
         " was refused by Redis (fenced): shard " + (*r)[1].str() + " is now '" +
         (*r)[2].str() + "'; this node's work since its last committed checkpoint (" +
         std::to_string(last) + ") is void");
    return true;
  }
  {
    MutexLock lock(mu_);
    commits_.Accepted(*req);
  }
  AfterCommit(req->sequence);
  return true;
}

bool Cluster::Release() {
  if (failed_.load()) return true;
  {
    MutexLock lock(mu_);
    if (commits_.Pending()) {
      spdlog::warn(
          "cluster: checkpoint {} is not committed; the leases are kept (they expire)",
          commits_.published());
      return true;
    }
  }
  std::vector<std::pair<uint32_t, std::string>> held;
  for (uint32_t s : tenure_.wanted())
    if (tenure_.leases().Holds(s)) held.emplace_back(s, tenure_.leases().Token(s));
  auto r = redis_->Pipeline(members_.LeaveCommands(held));
  if (!r.ok() || (*r)[0].IsError()) return false;
  uint64_t committed = 0;
  {
    MutexLock lock(mu_);
    committed = commits_.committed();
  }
  spdlog::info("cluster: left job {}: {} leases given up (last commit: checkpoint {})",
               cfg_.job, (*r)[0].Int(), committed);
  return true;
}

}  // namespace crawler::engine
