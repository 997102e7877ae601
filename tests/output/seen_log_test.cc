// crawler/src/seen_log.h: records appended by shard, read back up to a
// checkpoint's length and filtered by shard; lengths that do not fit refused.
#include "output/seen_log.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "dedup/hash.h"

namespace crawler::output {
namespace {

namespace fs = std::filesystem;

TEST_CASE("SeenLog: appended records read back up to a length, by shard",
          "[engine][seen_log]") {
  fs::path dir =
      fs::temp_directory_path() / ("seen_log_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "seen.log").string();
  std::vector<SeenRecord> first = {{3, dedup::HashKey("http://a/1")},
                                   {7, dedup::HashKey("http://b/1")},
                                   {3, dedup::HashKey("http://a/2")}};
  {
    auto log = SeenLog::Open(path);
    REQUIRE(log.ok());
    REQUIRE((*log)->Append(first).ok());
    CHECK((*log)->Bytes() == 3 * SeenLog::kRecordBytes);
  }
  // Reopened (a resumed node): appends after what is there.
  uint64_t cut = 0;
  {
    auto log = SeenLog::Open(path);
    REQUIRE(log.ok());
    cut = (*log)->Bytes();
    CHECK(cut == 3 * SeenLog::kRecordBytes);
    REQUIRE((*log)->Append({{3, dedup::HashKey("http://a/3")}}).ok());
    CHECK((*log)->Bytes() == 4 * SeenLog::kRecordBytes);
  }
  auto shard3 = SeenLog::Read(path, cut, [](uint32_t s) { return s == 3; });
  REQUIRE(shard3.ok());
  REQUIRE(shard3->size() == 2);  // the record after `cut` is not read
  CHECK((*shard3)[0].hash == dedup::HashKey("http://a/1"));
  CHECK((*shard3)[1].hash == dedup::HashKey("http://a/2"));
  auto all = SeenLog::Read(path, fs::file_size(path), [](uint32_t) { return true; });
  REQUIRE(all.ok());
  CHECK(all->size() == 4);
  CHECK((*all)[1].shard == 7);

  auto torn = SeenLog::Read(path, cut + 5, [](uint32_t) { return true; });
  CHECK_FALSE(torn.ok());
  CHECK_THAT(torn.status().message(), Catch::Contains("not a whole number"));
  auto longer =
      SeenLog::Read(path, 8 * SeenLog::kRecordBytes, [](uint32_t) { return true; });
  CHECK_FALSE(longer.ok());
  CHECK_THAT(longer.status().message(), Catch::Contains("shorter than"));
  auto missing = SeenLog::Read((dir / "none").string(), SeenLog::kRecordBytes,
                               [](uint32_t) { return true; });
  CHECK_FALSE(missing.ok());
  CHECK_THAT(missing.status().message(), Catch::Contains("none"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace crawler::output
