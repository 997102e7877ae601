// output/history.h: the URL history in RocksDB: records, the due index,
// checkpoint images and their restore, with real files.
#include "output/history.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace crawler::output {
namespace {

namespace fs = std::filesystem;

std::string TestDir(const std::string& name) {
  const std::string dir = (fs::temp_directory_path() /
                           ("crawler-history-" + name + "-" + std::to_string(::getpid())))
                              .string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

HistoryRecord Record(uint64_t due_ms, const std::string& etag = "\"e1\"") {
  HistoryRecord r;
  r.fetched_ms = 1'790'000'000'000;
  r.status = 200;
  r.etag = etag;
  r.last_modified = "Fri, 27 Nov 2026 11:41:52 GMT";
  r.payload_digest = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ";
  r.record_id = "<urn:uuid:4c1d6a5e-2f36-4f0e-9a52-9d3c1f0b7e21>";
  r.capture_ms = r.fetched_ms;
  r.interval_ms = 3600 * 1000;
  r.due_ms = due_ms;
  r.changed = 2;
  r.unchanged = 5;
  return r;
}

TEST_CASE("History records: encoded and decoded whole; damage and other versions named",
          "[unit][history]") {
  HistoryRecord r = Record(42);
  r.capture_uri = "http://a.test/old";
  r.gone = 1;
  r.dated = 2;
  r.exposure_ms = 77'000;
  r.content_type = "image/svg+xml";
  auto back = DecodeHistoryRecord(EncodeHistoryRecord(r), "http://a.test/");
  REQUIRE(back.ok());
  CHECK(*back == r);
  const std::string bytes = EncodeHistoryRecord(r);
  auto cut = DecodeHistoryRecord(bytes.substr(0, bytes.size() - 3), "http://a.test/");
  CHECK(cut.status().code() == Status::Code::kCorruption);
  CHECK(cut.status().message().find("http://a.test/") != std::string::npos);
  CHECK(DecodeHistoryRecord(bytes + "x", "u").status().code() ==
        Status::Code::kCorruption);
  std::string other = bytes;
  other[0] = 9;
  auto newer = DecodeHistoryRecord(other, "u");
  CHECK(newer.status().code() == Status::Code::kBadVersion);
  CHECK(newer.status().message().find("version 9") != std::string::npos);
  // Older builds' records: version 2 without the capture's Content-Type,
  // version 1 with nothing dated either.
  const size_t type_bytes = 4 + r.content_type.size();
  std::string v2 = bytes.substr(0, bytes.size() - type_bytes);
  v2[0] = 2;
  auto two = DecodeHistoryRecord(v2, "u");
  REQUIRE(two.ok());
  HistoryRecord expect = r;
  expect.content_type.clear();
  CHECK(*two == expect);
  std::string v1 = bytes.substr(0, bytes.size() - type_bytes - 12);
  v1[0] = 1;
  auto older = DecodeHistoryRecord(v1, "u");
  REQUIRE(older.ok());
  expect.dated = 0;
  expect.exposure_ms = 0;
  CHECK(*older == expect);
}

TEST_CASE(
    "History: put, get, erase; the due index follows each record (earliest first, no "
    "stale entry after a record's due time moves); due URLs taken in one write",
    "[unit][history]") {
  const std::string dir = TestDir("index");
  auto h = History::Open(dir + "/db");
  REQUIRE(h.ok());
  History& history = **h;
  REQUIRE(history.Put("http://a.test/3", Record(3000)).ok());
  REQUIRE(history.Put("http://a.test/1", Record(1000)).ok());
  REQUIRE(history.Put("http://b.test/2", Record(2000)).ok());
  REQUIRE(history.Put("http://b.test/never", Record(0)).ok());  // nothing planned
  auto got = history.Get("http://a.test/1");
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK(**got == Record(1000));
  auto none = history.Get("http://a.test/none");
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());

  using Due = std::vector<std::pair<std::string, uint64_t>>;
  auto due = history.Due(2500, 10);
  REQUIRE(due.ok());
  CHECK(*due == Due{{"http://a.test/1", 1000}, {"http://b.test/2", 2000}});
  auto first = history.Due(1'000'000, 1);
  REQUIRE(first.ok());
  CHECK(*first == Due{{"http://a.test/1", 1000}});
  // Visited again: due later; the old entry is gone.
  REQUIRE(history.Put("http://a.test/1", Record(5000, "\"e2\"")).ok());
  due = history.Due(1'000'000, 10);
  REQUIRE(due.ok());
  CHECK(*due == Due{{"http://b.test/2", 2000},
                    {"http://a.test/3", 3000},
                    {"http://a.test/1", 5000}});
  // Forgotten: its record and its due entry.
  REQUIRE(history.Erase("http://a.test/3").ok());
  REQUIRE(history.Erase("http://a.test/absent").ok());
  due = history.Due(1'000'000, 10);
  REQUIRE(due.ok());
  CHECK(*due == Due{{"http://b.test/2", 2000}, {"http://a.test/1", 5000}});
  none = history.Get("http://a.test/3");
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());

  // Taken for the scheduler: off the due index in one write, each to the
  // due time next_due gives (0: queued), the rest of the record kept.
  REQUIRE(history.Put("http://c.test/4", Record(4000)).ok());
  auto taken = history.TakeDue(4500, 10, [](std::string_view url) -> uint64_t {
    return url.starts_with("http://c.test/") ? 9000 : 0;
  });
  REQUIRE(taken.ok());
  REQUIRE(taken->size() == 2);
  CHECK((*taken)[0].first == "http://b.test/2");
  CHECK((*taken)[0].second == Record(0));
  CHECK((*taken)[1].first == "http://c.test/4");
  CHECK((*taken)[1].second == Record(9000));
  due = history.Due(1'000'000, 10);
  REQUIRE(due.ok());
  CHECK(*due == Due{{"http://a.test/1", 5000}, {"http://c.test/4", 9000}});
  got = history.Get("http://b.test/2");
  REQUIRE(got.ok());
  CHECK(**got == Record(0));
  // At most `limit`; nothing due: nothing taken.
  taken = history.TakeDue(1'000'000, 1, [](std::string_view) -> uint64_t { return 0; });
  REQUIRE(taken.ok());
  CHECK(taken->size() == 1);
  taken = history.TakeDue(100, 10, [](std::string_view) -> uint64_t { return 0; });
  REQUIRE(taken.ok());
  CHECK(taken->empty());
  fs::remove_all(dir);
}

TEST_CASE(
    "History checkpoint: the image holds exactly the state at the cut; a restore brings "
    "it back over a store that went on; a directory that is no image is refused, named",
    "[unit][history]") {
  const std::string dir = TestDir("checkpoint");
  const std::string live = dir + "/history", image = dir + "/checkpoint/history";
  {
    auto h = History::Open(live);
    REQUIRE(h.ok());
    for (int i = 0; i < 500; ++i)
      REQUIRE((*h)->Put("http://a.test/" + std::to_string(i), Record(1000 + i)).ok());
    fs::create_directories(dir + "/checkpoint");
    REQUIRE((*h)->CheckpointTo(image).ok());
    // After the cut: changed, added, erased; none of it is in the image.
    REQUIRE((*h)->Put("http://a.test/7", Record(9000, "\"e9\"")).ok());
    REQUIRE((*h)->Put("http://a.test/new", Record(1)).ok());
    REQUIRE((*h)->Erase("http://a.test/8").ok());
    // A second image beside a live store does not disturb it.
    REQUIRE((*h)->CheckpointTo(dir + "/later").ok());
    auto after = (*h)->Get("http://a.test/new");
    REQUIRE(after.ok());
    CHECK(after->has_value());
  }
  // What a crash leaves in the live store does not matter: restored from
  // the image.
  REQUIRE(History::Restore(image, live).ok());
  auto h = History::Open(live);
  REQUIRE(h.ok());
  auto seven = (*h)->Get("http://a.test/7");
  REQUIRE(seven.ok());
  REQUIRE(seven->has_value());
  CHECK(**seven == Record(1007));
  auto eight = (*h)->Get("http://a.test/8");
  REQUIRE(eight.ok());
  CHECK(eight->has_value());
  auto added = (*h)->Get("http://a.test/new");
  REQUIRE(added.ok());
  CHECK_FALSE(added->has_value());
  auto due = (*h)->Due(1'000'000, 1000);
  REQUIRE(due.ok());
  CHECK(due->size() == 500);
  CHECK(due->front().first == "http://a.test/0");
  // The restored store goes on; the image is left as it was.
  REQUIRE((*h)->Put("http://a.test/7", Record(1)).ok());
  h->reset();
  REQUIRE(History::Restore(image, live).ok());
  h = History::Open(live);
  REQUIRE(h.ok());
  seven = (*h)->Get("http://a.test/7");
  REQUIRE(seven.ok());
  CHECK(**seven == Record(1007));
  h->reset();

  fs::create_directories(dir + "/empty");
  Status st = History::Restore(dir + "/empty", live);
  CHECK(st.code() == Status::Code::kCorruption);
  CHECK(st.message().find(dir + "/empty") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE(
    "History image read for a cluster's moving shards: the records an image holds for "
    "the URLs wanted, the image's files untouched; ForEach visits every record once",
    "[unit][history]") {
  const std::string dir = TestDir("image");
  const std::string image = dir + "/checkpoint/history";
  {
    auto h = History::Open(dir + "/history");
    REQUIRE(h.ok());
    for (int i = 0; i < 300; ++i)
      REQUIRE((*h)->Put("http://h" + std::to_string(i % 3) + ".test/" + std::to_string(i),
                        Record(1000 + i))
                  .ok());
    size_t visited = 0;
    REQUIRE((*h)->ForEach([&](std::string_view url, const HistoryRecord& r) {
                  ++visited;
                  CHECK(url.starts_with("http://h"));
                  CHECK(r.due_ms >= 1000);
                  return Status::Ok();
                })
                .ok());
    CHECK(visited == 300);
    // f's error stops the walk, and is returned.
    Status stop = (*h)->ForEach([](std::string_view, const HistoryRecord&) {
      return Status::Error(Status::Code::kIoError, "enough");
    });
    CHECK(stop.message() == "enough");
    fs::create_directories(dir + "/checkpoint");
    REQUIRE((*h)->CheckpointTo(image).ok());
  }
  std::map<std::string, uintmax_t> before;
  for (const fs::directory_entry& e : fs::directory_iterator(image))
    before[e.path().filename().string()] = e.file_size();
  auto read = History::ReadImage(image, dir + "/scratch", [](std::string_view url) {
    return url.starts_with("http://h1.test/");
  });
  REQUIRE(read.ok());
  REQUIRE(read->size() == 100);
  for (const auto& [url, r] : *read) {
    CHECK(url.starts_with("http://h1.test/"));
    CHECK(r ==
          Record(1000 + std::stoi(url.substr(std::string("http://h1.test/").size()))));
  }
  std::map<std::string, uintmax_t> after;
  for (const fs::directory_entry& e : fs::directory_iterator(image))
    after[e.path().filename().string()] = e.file_size();
  CHECK(after == before);  // nothing written beside the image (RocksDB's LOG)
  CHECK_FALSE(fs::exists(dir + "/scratch"));
  // Not an image: named.
  fs::create_directories(dir + "/empty");
  auto none = History::ReadImage(dir + "/empty", dir + "/scratch",
                                 [](std::string_view) { return true; });
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message().find(dir + "/empty") != std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace crawler::output
