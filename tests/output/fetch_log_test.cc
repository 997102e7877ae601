// crawler/src/fetch_log.h: the lines, their length bookkeeping, write errors.
#include "output/fetch_log.h"

#include <unistd.h>

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

namespace crawler::output {
namespace {

namespace fs = std::filesystem;

TEST_CASE("FetchLog: one JSON line per entry, escaped, with the response's fields",
          "[engine][fetch_log]") {
  FetchLogResponse r{.content_type = "text/html",
                     .bytes = 3,
                     .seconds = 0.25,
                     .location = "/next\"quoted\"",
                     .ip = "127.1.0.9"};
  std::string line =
      FetchLog::Line({"http://a.test/\x01", 301, &r, 2, "http://a.test/", "", false});
  boost::json::object o = boost::json::parse(line).as_object();
  CHECK(o.at("url").as_string() == "http://a.test/\x01");
  CHECK(o.at("status").as_int64() == 301);
  CHECK(o.at("bytes").to_number<uint64_t>() == 3);
  CHECK(o.at("fetch_ms").as_int64() == 250);
  CHECK(o.at("location").as_string() == "/next\"quoted\"");
  CHECK(o.at("ip").as_string() == "127.1.0.9");
  CHECK(o.at("depth").to_number<uint64_t>() == 2);
  CHECK_FALSE(o.contains("error"));
  std::string skip =
      FetchLog::Line({"http://a.test/x", 0, nullptr, 1, "r", "robots", false});
  CHECK(
      skip ==
      R"({"url":"http://a.test/x","status":0,"depth":1,"referrer":"r","error":"robots"})");
}

TEST_CASE("FetchLog: Bytes() follows the file, across a reopen", "[engine][fetch_log]") {
  std::string path =
      (fs::temp_directory_path() / ("fetchlog-" + std::to_string(::getpid()))).string();
  fs::remove(path);
  {
    auto log = FetchLog::Open(path);
    REQUIRE(log.ok());
    REQUIRE((*log)->Append({"http://a.test/", 200, nullptr, 0, "", "", false}).ok());
    CHECK((*log)->Bytes() == fs::file_size(path));
  }
  auto log = FetchLog::Open(path);
  REQUIRE(log.ok());
  CHECK((*log)->Bytes() == fs::file_size(path));
  REQUIRE((*log)->Append({"http://a.test/2", 200, nullptr, 0, "", "", false}).ok());
  CHECK((*log)->Bytes() == fs::file_size(path));
  fs::remove(path);
}

TEST_CASE("FetchLog: a failed write is an error naming the file (/dev/full)",
          "[engine][fetch_log]") {
  auto log = FetchLog::Open("/dev/full");
  REQUIRE(log.ok());
  Status st = (*log)->Append({"http://a.test/", 200, nullptr, 0, "", "", false});
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == Status::Code::kIoError);
  CHECK(st.message() == "/dev/full: write: No space left on device");
}

TEST_CASE("FetchLog: a directory that cannot hold the file is an error naming it",
          "[engine][fetch_log]") {
  auto log = FetchLog::Open("/nonexistent-dir/fetch-log.jsonl");
  REQUIRE_FALSE(log.ok());
  CHECK(log.status().message().rfind("/nonexistent-dir/fetch-log.jsonl: open: ", 0) == 0);
}

}  // namespace
}  // namespace crawler::output
