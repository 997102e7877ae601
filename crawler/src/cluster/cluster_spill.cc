// Backpressure of a cluster node's outbound batches (see cluster.h): which
// batches go out now, which wait (held in RAM), spill files for the rest,
// reading them back, and taking them over after a crash.
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
    for (const auto& [shard, files] : spill_) {
      const uint64_t room = outbox_.SpillRoom(shard);
      if (!files.empty() && room > 0) from_disk.emplace_back(shard, room);
    }
  }
  if (from_disk.empty()) return;
  std::vector<Batch> read;
  for (auto [shard, max] : from_disk) {
    for (Batch& b : ReadSpill(shard, max)) read.push_back(std::move(b));
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
  std::error_code ec;
  std::filesystem::create_directories(spill_dir_, ec);
  uint64_t urls = 0, files = 0;
  for (auto& [shard, q] : out) {
    SpillFile f;
    f.path = spill_dir_ + "/" + std::to_string(shard) + "-" +
             std::to_string(++spill_files_made_) + ".txt";
    std::string text;
    for (const Batch& b : q) {
      text += b.lines;
      f.urls += b.urls;
    }
    // Whole or not at all; fsynced by the next checkpoint's writer.
    Status st = WriteFileAtomic(f.path, text, /*durable=*/false);
    if (!st.ok()) {
      // Disk full or gone: the batches stay in RAM (nothing is lost; memory
      // grows until the disk or Redis is back).
      spdlog::error("cluster: cannot spill the outbox: {}", st.message());
      MutexLock lock(mu_);
      for (Batch& b : q) outbox_.Hold(std::move(b));
      continue;
    }
    urls += f.urls;
    ++files;
    spilled_urls_ += f.urls;
    spill_[shard].push_back(std::move(f));
  }
  if (files > 0)
    spdlog::info("cluster: {} held URLs spilled to {} files in {} (over {} in RAM)", urls,
                 files, spill_dir_, cfg_.outbox_ram_urls);
}

std::vector<Cluster::Batch> Cluster::ReadSpill(uint32_t shard, uint64_t max) {
  std::vector<Batch> out;
  std::deque<SpillFile>& files = spill_[shard];
  while (!files.empty() && out.size() < max) {
    SpillFile& f = files.front();
    std::ifstream in(f.path, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(f.offset));
    Batch b;
    b.shard = shard;
    std::string line;
    while (out.size() < max && std::getline(in, line)) {
      f.offset += line.size() + 1;
      b.lines += line;
      b.lines += '\n';
      if (++b.urls >= cfg_.batch_urls) {
        spilled_urls_ -= b.urls;
        out.push_back(std::move(b));
        b = Batch{};
        b.shard = shard;
      }
    }
    if (b.urls > 0) {
      spilled_urls_ -= b.urls;
      out.push_back(std::move(b));
    }
    if (!in) {  // read to its end (or unreadable: RestoreSpill checked it)
      if (in.bad()) spdlog::error("cluster: cannot read {}", f.path);
      drained_.push_back(f.path);  // deleted once a later checkpoint is out
      files.pop_front();
    }
  }
  if (files.empty()) spill_.erase(shard);
  return out;
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
    for (const auto& [shard, files] : spill_) shards.push_back(shard);
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
  std::error_code ec;
  if (!std::filesystem::is_directory(spill_dir_, ec)) return Status::Ok();
  std::vector<std::pair<uint64_t, std::pair<uint32_t, std::string>>> found;  // by number
  for (const auto& entry : std::filesystem::directory_iterator(spill_dir_, ec)) {
    std::string name = entry.path().filename().string();
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0) {
      std::filesystem::remove(entry.path(), ec);  // a write cut short: never used
      continue;
    }
    uint32_t shard = 0;
    uint64_t number = 0;
    size_t dash = name.find('-');
    auto a =
        std::from_chars(name.data(), name.data() + std::min(dash, name.size()), shard);
    auto b =
        dash == std::string::npos
            ? std::from_chars_result{nullptr, std::errc::invalid_argument}
            : std::from_chars(name.data() + dash + 1, name.data() + name.size(), number);
    if (a.ec != std::errc() || b.ec != std::errc() || std::string_view(b.ptr) != ".txt" ||
        shard >= cfg_.shards) {
      return Status::Error(Status::Code::kCorruption,
                           entry.path().string() +
                               ": not a spill file of this job (SHARD-N.txt, shard < " +
                               std::to_string(cfg_.shards) + ")");
    }
    found.push_back({number, {shard, entry.path().string()}});
  }
  if (ec) return Status::Error(Status::Code::kIoError, spill_dir_ + ": " + ec.message());
  std::sort(found.begin(), found.end());
  uint64_t urls = 0;
  MutexLock spill(spill_mu_);
  for (auto& [number, where] : found) {
    auto& [shard, path] = where;
    std::ifstream in(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
    if (in.bad()) return IoError(path, "read");
    std::vector<frontier::UrlEntry> entries;
    if (!ParseLines(text, &entries))
      return Status::Error(Status::Code::kCorruption,
                           path + ": not a cluster spill file (a malformed line)");
    spill_files_made_ = std::max(spill_files_made_, number);
    if (entries.empty()) {
      std::remove(path.c_str());
      continue;
    }
    spill_[shard].push_back(SpillFile{path, entries.size(), 0});
    spilled_urls_ += entries.size();
    urls += entries.size();
  }
  if (urls > 0) {
    spdlog::info("cluster: {} URLs in {} spill files taken back", urls, found.size());
    MutexLock lock(mu_);
    outbox_.Requeued(urls);
  }
  return Status::Ok();
}

}  // namespace crawler::engine
