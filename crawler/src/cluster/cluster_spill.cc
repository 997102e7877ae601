// Backpressure of a cluster node's outbound batches (see cluster.h): which
// batches go out now, which wait (held in RAM, outbox.h), spill files for
// the rest (spill.h), reading them back, and taking them over after a crash.
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/file_util.h"
#include "cluster/cluster.h"
#include "cluster/cluster_wire.h"

namespace crawler::engine {

using namespace cluster_wire;  // NOLINT: the formats of this module

void Cluster::Select(bool flush_all, std::vector<Batch>* due) {
  // spill_mu_ throughout: a batch read back from a file is in flight in the
  // outbox before a checkpoint can be cut (OnCut takes spill_mu_ first).
  MutexLock spill(spill_mu_);
  std::vector<std::pair<uint32_t, uint64_t>> from_disk;  // shard, batches
  {
    MutexLock lock(mu_);
    *due = outbox_.Select(flush_all, SteadyClock::now());
    for (uint32_t shard : spill_.Shards()) {
      const uint64_t room = outbox_.SpillRoom(shard);
      if (room > 0) from_disk.emplace_back(shard, room);
    }
  }
  if (from_disk.empty()) return;
  std::vector<Batch> read;
  for (auto [shard, max] : from_disk) {
    for (Batch& b : spill_.Read(shard, max)) read.push_back(std::move(b));
  }
  MutexLock lock(mu_);
  for (Batch& b : read) {
    outbox_.Sending(b);
    due->push_back(std::move(b));
  }
}

void Cluster::HoldAll() {
  MutexLock lock(mu_);
  outbox_.HoldDue(SteadyClock::now());
}

void Cluster::SpillIfOver() {
  {
    MutexLock lock(mu_);
    if (outbox_.held_urls() <= cfg_.outbox_ram_urls) return;
  }
  MutexLock spill(spill_mu_);
  std::map<uint32_t, std::deque<Batch>> out;
  {
    MutexLock lock(mu_);
    out = outbox_.TakeHeld();
  }
  uint64_t urls = 0, files = 0;
  for (auto& [shard, q] : out) {
    Status st = spill_.Write(shard, q);
    if (!st.ok()) {
      // Disk full or gone: the batches stay in RAM (nothing is lost; memory
      // grows until the disk or Redis is back).
      spdlog::error("cluster: cannot spill the outbox: {}", st.message());
      MutexLock lock(mu_);
      for (Batch& b : q) outbox_.Hold(std::move(b));
      continue;
    }
    for (const Batch& b : q) urls += b.urls;
    ++files;
  }
  if (files > 0)
    spdlog::info("cluster: {} held URLs spilled to {} files in {} (over {} in RAM)", urls,
                 files, spill_.dir(), cfg_.outbox_ram_urls);
}

bool Cluster::RefreshLag() {
  auto now = SteadyClock::now();
  if (now - last_lag_ < std::chrono::milliseconds(100)) return true;
  last_lag_ = now;
  std::vector<uint32_t> shards;
  {
    MutexLock spill(spill_mu_);
    MutexLock lock(mu_);
    shards = outbox_.HeldShards();
    for (uint32_t shard : spill_.Shards()) shards.push_back(shard);
  }
  if (shards.empty()) return true;
  std::sort(shards.begin(), shards.end());
  shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
  std::vector<std::string> cmd = {"EVAL", kLagScript, std::to_string(shards.size())};
  for (uint32_t s : shards) cmd.push_back(StreamKey(s));
  auto r = redis_->Command(cmd);
  if (!r.ok()) return false;
  MutexLock lock(mu_);
  for (size_t i = 0; i < shards.size(); ++i) {
    const redisReply* lag = Element(r->raw(), i);
    if (lag != nullptr && lag->type == REDIS_REPLY_INTEGER)
      outbox_.SetLag(shards[i],
                     static_cast<uint64_t>(std::max<long long>(0, lag->integer)));
  }
  return true;
}

Status Cluster::RestoreSpill() {
  Result<uint64_t> urls = uint64_t{0};
  {
    MutexLock spill(spill_mu_);
    urls = spill_.Restore();
  }
  if (!urls.ok()) return urls.status();
  if (*urls > 0) {
    MutexLock lock(mu_);
    outbox_.Requeued(*urls);
  }
  return Status::Ok();
}

}  // namespace crawler::engine
