// See kept_checkpoints.h.
#include "cluster/handoff/kept_checkpoints.h"

#include <spdlog/spdlog.h>

#include <charconv>
#include <cstdio>
#include <filesystem>

#include "base/file_util.h"
#include "cluster/membership/shard_loads.h"
#include "cluster/redis/cluster_wire.h"

namespace crawler::cluster {

namespace fs = std::filesystem;

KeptCheckpoints::KeptCheckpoints(std::string out_dir) : out_dir_(std::move(out_dir)) {
  std::error_code ec;
  for (const auto& e :
       fs::directory_iterator(out_dir_ + "/" + cluster_wire::kHandoffDir, ec)) {
    const std::string name = e.path().filename().string();
    uint64_t seq = 0;
    auto [end, err] = std::from_chars(name.data(), name.data() + name.size(), seq);
    if (err == std::errc() && end == name.data() + name.size())
      kept_.insert(seq);
    else
      fs::remove_all(e.path(), ec);  // a copy cut short (SEQ.tmp)
  }
}

Status KeptCheckpoints::Keep(uint64_t sequence) {
  const std::string dest =
      out_dir_ + "/" + cluster_wire::kHandoffDir + "/" + std::to_string(sequence);
  const std::string found = CheckpointOfSequence(out_dir_, sequence);
  if (found.empty())
    return Status::Error(Status::Code::kIoError,
                         out_dir_ + ": checkpoint " + std::to_string(sequence) +
                             " is neither checkpoint/ nor checkpoint.prev/");
  if (found != dest) {
    // Built aside, then renamed: a taker never sees half of it.
    const std::string tmp = dest + ".tmp";
    std::error_code ec;
    fs::remove_all(tmp, ec);
    fs::create_directories(tmp, ec);
    if (ec) return IoError(tmp, "create: " + ec.message());
    // Its files, and its history/ ([recrawl]: the URL history's image).
    for (const auto& e : fs::recursive_directory_iterator(found, ec)) {
      const fs::path to = fs::path(tmp) / fs::relative(e.path(), found);
      if (e.is_directory()) fs::create_directories(to, ec);
      if (ec) return IoError(to.string(), "create: " + ec.message());
      if (!e.is_regular_file()) continue;
      fs::create_hard_link(e.path(), to, ec);
      if (ec) {
        ec.clear();
        fs::copy_file(e.path(), to, ec);
        if (ec) return IoError(to.string(), "copy from " + found + ": " + ec.message());
      }
    }
    if (ec) return IoError(found, "list: " + ec.message());
    if (std::rename(tmp.c_str(), dest.c_str()) != 0) return IoError(tmp, "rename");
  }  // else kept already (by an earlier process of this node)
  kept_.insert(sequence);
  return Status::Ok();
}

std::set<uint64_t> KeptCheckpoints::Prune(const std::set<uint64_t>& named) {
  std::set<uint64_t> gone;
  for (uint64_t seq : kept_)
    if (named.count(seq) == 0) gone.insert(seq);
  for (uint64_t seq : gone) {
    kept_.erase(seq);
    std::error_code ec;
    fs::remove_all(out_dir_ + "/" + cluster_wire::kHandoffDir + "/" + std::to_string(seq),
                   ec);
    spdlog::info(
        "cluster: kept checkpoint {} removed (no shard's source names it any more)", seq);
  }
  return gone;
}

}  // namespace crawler::cluster
