// See spill.h.
#include "cluster/exchange/spill.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <utility>

#include "base/file_util.h"
#include "cluster/redis/cluster_wire.h"

namespace crawler::cluster {

SpillFiles::SpillFiles(std::string dir, uint32_t shards, uint32_t batch_urls)
    : dir_(std::move(dir)), shards_(shards), batch_urls_(batch_urls) {}

std::vector<uint32_t> SpillFiles::Shards() const {
  std::vector<uint32_t> out;
  for (const auto& [shard, files] : files_)
    if (!files.empty()) out.push_back(shard);
  return out;
}

Status SpillFiles::Write(uint32_t shard, const std::deque<OutBatch>& batches) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  File f;
  f.path = dir_ + "/" + std::to_string(shard) + "-" + std::to_string(made_ + 1) + ".txt";
  std::string text;
  for (const OutBatch& b : batches) {
    text += b.lines;
    f.urls += b.urls;
  }
  // Whole or not at all; fsynced by the next checkpoint's writer.
  Status st = WriteFileAtomic(f.path, text, /*durable=*/false);
  if (!st.ok()) return st;
  ++made_;
  urls_ += f.urls;
  files_[shard].push_back(std::move(f));
  return Status::Ok();
}

std::vector<OutBatch> SpillFiles::Read(uint32_t shard, uint64_t max) {
  std::vector<OutBatch> out;
  auto it = files_.find(shard);
  if (it == files_.end()) return out;
  std::deque<File>& files = it->second;
  while (!files.empty() && out.size() < max) {
    File& f = files.front();
    std::ifstream in(f.path, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(f.offset));
    OutBatch b;
    b.shard = shard;
    std::string line;
    while (out.size() < max && std::getline(in, line)) {
      f.offset += line.size() + 1;
      b.lines += line;
      b.lines += '\n';
      if (++b.urls >= batch_urls_) {
        urls_ -= b.urls;
        out.push_back(std::move(b));
        b = OutBatch{};
        b.shard = shard;
      }
    }
    if (b.urls > 0) {
      urls_ -= b.urls;
      out.push_back(std::move(b));
    }
    if (!in) {  // read to its end (or unreadable: Restore checked it)
      if (in.bad()) spdlog::error("cluster: cannot read {}", f.path);
      read_back_.push_back(f.path);  // deleted once a later checkpoint is out
      files.pop_front();
    }
  }
  if (files.empty()) files_.erase(it);
  return out;
}

std::vector<std::string> SpillFiles::Cut(uint64_t sequence) {
  std::vector<std::string> out;
  for (const auto& [shard, files] : files_)
    for (const File& f : files) out.push_back(f.path);
  if (!out.empty()) out.push_back(dir_);  // their names
  // Files read back before this cut: their URLs are in its outbox, or in
  // Redis.
  if (!read_back_.empty()) read_back_cut_[sequence] = std::move(read_back_);
  read_back_.clear();
  return out;
}

void SpillFiles::Committed(uint64_t sequence) {
  for (auto it = read_back_cut_.begin();
       it != read_back_cut_.end() && it->first <= sequence; it = read_back_cut_.erase(it))
    for (const std::string& path : it->second) std::remove(path.c_str());
}

namespace {

// "SHARD-N.txt": false if `name` is not one, or SHARD >= shards.
bool ParseName(std::string_view name, uint32_t shards, uint32_t* shard,
               uint64_t* number) {
  const size_t dash = name.find('-');
  if (dash == std::string_view::npos) return false;
  auto a = std::from_chars(name.data(), name.data() + dash, *shard);
  auto b = std::from_chars(name.data() + dash + 1, name.data() + name.size(), *number);
  return a.ec == std::errc() && a.ptr == name.data() + dash && b.ec == std::errc() &&
         std::string_view(b.ptr, name.data() + name.size() - b.ptr) == ".txt" &&
         *shard < shards;
}

}  // namespace

Result<uint64_t> SpillFiles::Restore() {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir_, ec)) return uint64_t{0};
  std::vector<std::pair<uint64_t, std::pair<uint32_t, std::string>>> found;  // by N
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0) {
      std::filesystem::remove(entry.path(), ec);  // a write cut short: never used
      continue;
    }
    uint32_t shard = 0;
    uint64_t number = 0;
    if (!ParseName(name, shards_, &shard, &number))
      return Status::Error(Status::Code::kCorruption,
                           entry.path().string() +
                               ": not a spill file of this job (SHARD-N.txt, shard < " +
                               std::to_string(shards_) + ")");
    found.push_back({number, {shard, entry.path().string()}});
  }
  if (ec) return Status::Error(Status::Code::kIoError, dir_ + ": " + ec.message());
  std::sort(found.begin(), found.end());
  uint64_t urls = 0;
  for (auto& [number, where] : found) {
    auto& [shard, path] = where;
    std::ifstream in(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
    if (in.bad()) return IoError(path, "read");
    std::vector<frontier::UrlEntry> entries;
    if (!cluster_wire::ParseLines(text, &entries))
      return Status::Error(Status::Code::kCorruption,
                           path + ": not a cluster spill file (a malformed line)");
    made_ = std::max(made_, number);
    if (entries.empty()) {
      std::remove(path.c_str());
      continue;
    }
    files_[shard].push_back(File{path, entries.size(), 0});
    urls_ += entries.size();
    urls += entries.size();
  }
  if (urls > 0)
    spdlog::info("cluster: {} URLs in {} spill files taken back", urls, found.size());
  return urls;
}

}  // namespace crawler::cluster
