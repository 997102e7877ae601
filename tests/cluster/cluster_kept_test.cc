// The handoff checkpoints a node keeps (cluster/handoff/kept_checkpoints.h), on real
// files: a checkpoint kept by hard links under OUT/handoff/SEQ/ survives the
// rotation of checkpoint/ and checkpoint.prev/, one kept by an earlier
// process is found again, a copy cut short is removed, and a copy goes only
// when no source names it. (Real handoffs: cluster_test.cc, "Cluster join*",
// "Cluster handoff interrupted*", "Cluster resume after a join*".)
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "cluster/handoff/kept_checkpoints.h"
#include "cluster/membership/shard_loads.h"
#include "crawler/checkpoint.h"

namespace crawler::cluster {
namespace {

namespace fs = std::filesystem;
using Seqs = std::set<uint64_t>;

// A checkpoint directory of `sequence` at OUT/`name`/, with one data file.
void MakeCheckpoint(const std::string& out, const std::string& name, uint64_t sequence) {
  const std::string dir = out + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir + "/history");
  checkpoint::CheckpointInfo info;
  info.sequence = sequence;
  std::ofstream(dir + "/MANIFEST.json") << checkpoint::EncodeManifest(info, {});
  std::ofstream(dir + "/frontier.bin") << "frontier of " << sequence;
  std::ofstream(dir + "/history/image") << "history of " << sequence;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

TEST_CASE(
    "KeptCheckpoints: a kept checkpoint outlives the rotation, is found by the next "
    "process, and goes when no source names it",
    "[engine][cluster]") {
  const std::string out =
      (fs::temp_directory_path() / ("kept-test-" + std::to_string(::getpid()))).string();
  fs::remove_all(out);
  MakeCheckpoint(out, "checkpoint", 4);
  MakeCheckpoint(out, "checkpoint.prev", 3);
  {
    KeptCheckpoints kept(out);
    CHECK(kept.empty());
    REQUIRE(kept.Keep(3).ok());
    REQUIRE(kept.Keep(4).ok());
    CHECK(kept.kept() == Seqs{3, 4});
    auto missing = kept.Keep(9);
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.message().find("checkpoint 9") != std::string::npos);
    // The node cuts on: 3 and 4 rotate away.
    MakeCheckpoint(out, "checkpoint", 6);
    MakeCheckpoint(out, "checkpoint.prev", 5);
    CHECK(Read(out + "/handoff/3/frontier.bin") == "frontier of 3");
    CHECK(Read(out + "/handoff/4/history/image") == "history of 4");
    CHECK(CheckpointOfSequence(out, 3) == out + "/handoff/3");
    REQUIRE(kept.Keep(3).ok());  // kept already: found in handoff/3
  }
  // The next process of the node: finds 3 and 4; a copy cut short goes.
  fs::create_directories(out + "/handoff/7.tmp");
  KeptCheckpoints again(out);
  CHECK(again.kept() == Seqs{3, 4});
  CHECK_FALSE(fs::exists(out + "/handoff/7.tmp"));
  CHECK(again.Prune({4, 5}) == Seqs{3});  // 5 is not kept: nothing to remove
  CHECK_FALSE(fs::exists(out + "/handoff/3"));
  CHECK(fs::exists(out + "/handoff/4/MANIFEST.json"));
  CHECK(again.Prune({4}).empty());
  CHECK(again.Prune({}) == Seqs{4});
  CHECK(again.empty());
  CHECK_FALSE(fs::exists(out + "/handoff/4"));
  CHECK(fs::exists(out + "/checkpoint/MANIFEST.json"));  // never touched
  fs::remove_all(out);
}

}  // namespace
}  // namespace crawler::cluster
