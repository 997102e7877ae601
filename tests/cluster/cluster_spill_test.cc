// The outbox's spill files (cluster/exchange/spill.h) on real files, without Redis:
// written whole, read back in order in batches of batch_urls, the files a
// cut must fsync, a file read back deleted only once a checkpoint cut after
// that is committed, and a resumed node's taking back (a write cut short
// removed, a file not of this job an error naming it). (Real nodes whose
// owner stops reading: cluster_test.cc, "Cluster: an owner stops reading*";
// Redis full: "Cluster: Redis full*".)
#include <unistd.h>

#include <catch2/catch.hpp>
#include <deque>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cluster/exchange/spill.h"

namespace crawler::cluster {
namespace {

namespace fs = std::filesystem;

// A batch of `n` outbox lines "http://hK.test/I\t0\t0\t".
OutBatch Lines(uint32_t shard, int n, int from = 0) {
  OutBatch b;
  b.shard = shard;
  for (int i = from; i < from + n; ++i) {
    b.lines +=
        "http://h" + std::to_string(shard) + ".test/" + std::to_string(i) + "\t0\t0\t\n";
    ++b.urls;
  }
  return b;
}

struct Dir {
  std::string path = (fs::temp_directory_path() /
                      ("spill-test-" + std::to_string(::getpid()) + "/cluster-outbox"))
                         .string();
  Dir() { fs::remove_all(fs::path(path).parent_path()); }
  ~Dir() { fs::remove_all(fs::path(path).parent_path()); }
};

std::string AllLines(const std::vector<OutBatch>& batches) {
  std::string out;
  for (const OutBatch& b : batches) out += b.lines;
  return out;
}

TEST_CASE(
    "SpillFiles: written whole, read back in order in batches; a file read back is "
    "deleted once a later cut is committed",
    "[engine][cluster]") {
  Dir dir;
  SpillFiles spill(dir.path, 8, /*batch_urls=*/4);
  CHECK(spill.Shards().empty());
  CHECK(spill.Cut(1).empty());  // nothing to fsync, not even the directory
  REQUIRE(spill.Write(3, std::deque<OutBatch>{Lines(3, 5), Lines(3, 2, 5)}).ok());
  REQUIRE(spill.Write(3, std::deque<OutBatch>{Lines(3, 3, 7)}).ok());
  REQUIRE(spill.Write(6, std::deque<OutBatch>{Lines(6, 1)}).ok());
  CHECK(spill.urls() == 11);
  CHECK(spill.Shards() == std::vector<uint32_t>{3, 6});
  CHECK(fs::exists(dir.path + "/3-1.txt"));
  CHECK(fs::exists(dir.path + "/3-2.txt"));
  CHECK(fs::exists(dir.path + "/6-3.txt"));

  const auto cut2 = spill.Cut(2);
  CHECK(cut2.size() == 4);  // three files and their directory
  CHECK(cut2.back() == dir.path);

  // Shard 3: room for 2 batches of 4: 8 of its 10 URLs, in order.
  auto read = spill.Read(3, 2);
  REQUIRE(read.size() == 2);
  CHECK(read[0].urls == 4);
  CHECK(read[1].urls == 3);  // the first file's end: a batch ends with it
  CHECK(AllLines(read) == Lines(3, 7).lines);
  CHECK(spill.urls() == 4);
  read = spill.Read(3, 10);
  REQUIRE(read.size() == 1);
  CHECK(AllLines(read) == Lines(3, 3, 7).lines);
  CHECK(spill.Shards() == std::vector<uint32_t>{6});
  CHECK(spill.Read(3, 10).empty());

  // Read back after cut 2: kept until a cut after that is committed.
  spill.Committed(2);
  CHECK(fs::exists(dir.path + "/3-1.txt"));
  const auto cut3 = spill.Cut(3);
  CHECK(cut3 == std::vector<std::string>{dir.path + "/6-3.txt", dir.path});
  CHECK(fs::exists(dir.path + "/3-2.txt"));
  spill.Committed(3);
  CHECK_FALSE(fs::exists(dir.path + "/3-1.txt"));
  CHECK_FALSE(fs::exists(dir.path + "/3-2.txt"));
  CHECK(fs::exists(dir.path + "/6-3.txt"));
}

TEST_CASE(
    "SpillFiles: a resumed node takes its files back in order; a file not of this job "
    "is an error naming it",
    "[engine][cluster]") {
  Dir dir;
  {
    SpillFiles before(dir.path, 8, 4);
    REQUIRE(before.Write(2, std::deque<OutBatch>{Lines(2, 3)}).ok());
    REQUIRE(before.Write(2, std::deque<OutBatch>{Lines(2, 2, 3)}).ok());
    REQUIRE(before.Write(5, std::deque<OutBatch>{Lines(5, 1)}).ok());
    before.Read(2, 1);  // read back, then the crash: not deleted
  }
  std::ofstream(dir.path + "/7-9.txt.tmp") << "a write cut short";
  std::ofstream(dir.path + "/4-8.txt") << "";  // empty: removed

  SpillFiles after(dir.path, 8, 4);
  auto urls = after.Restore();
  REQUIRE(urls.ok());
  CHECK(*urls == 6);
  CHECK(after.urls() == 6);
  CHECK_FALSE(fs::exists(dir.path + "/7-9.txt.tmp"));
  CHECK_FALSE(fs::exists(dir.path + "/4-8.txt"));
  auto read = after.Read(2, 10);
  CHECK(AllLines(read) == Lines(2, 5).lines);  // 2-1 then 2-2
  // New files are numbered after the ones taken back.
  REQUIRE(after.Write(2, std::deque<OutBatch>{Lines(2, 1)}).ok());
  CHECK(fs::exists(dir.path + "/2-9.txt"));

  for (const char* bad : {"x-1.txt", "9-1.txt", "2-1.dat", "21.txt"}) {
    Dir other;
    fs::create_directories(other.path);
    std::ofstream(other.path + "/" + bad) << "http://a.test/\t0\t0\t\n";
    SpillFiles s(other.path, 8, 4);
    auto r = s.Restore();
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find(bad) != std::string::npos);
  }
  Dir malformed;
  fs::create_directories(malformed.path);
  std::ofstream(malformed.path + "/1-1.txt") << "no tabs here\n";
  SpillFiles s(malformed.path, 8, 4);
  auto r = s.Restore();
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("1-1.txt: not a cluster spill file") !=
        std::string::npos);
}

}  // namespace
}  // namespace crawler::cluster
