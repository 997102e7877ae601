// base/file_util.h: the atomic-write protocol.
#include "base/file_util.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace crawler {
namespace {

namespace fs = std::filesystem;

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_CASE("WriteFileAtomic: the new contents replace the old whole; no temp file is left",
          "[base][file]") {
  fs::path dir = fs::temp_directory_path() / ("base-file-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string path = (dir / "f.txt").string();
  REQUIRE(WriteFileAtomic(path, "old").ok());
  REQUIRE(WriteFileAtomic(path, "new contents").ok());
  CHECK(Read(path) == "new contents");
  CHECK_FALSE(fs::exists(path + ".tmp"));

  // A writer that fails leaves the old file as it was and removes the temp.
  Status st = WriteFileAtomic(path, [](std::FILE* f) {
    std::fputs("half", f);
    return Status::Error(Status::Code::kIoError, "f.txt.tmp: write: simulated");
  });
  CHECK_FALSE(st.ok());
  CHECK(st.message() == "f.txt.tmp: write: simulated");
  CHECK(Read(path) == "new contents");
  CHECK_FALSE(fs::exists(path + ".tmp"));

  // A directory that does not exist: an error naming the temp file.
  st = WriteFileAtomic((dir / "no" / "f.txt").string(), "x");
  CHECK(st.code() == Status::Code::kIoError);
  CHECK(st.message().find("no/f.txt.tmp: create:") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("ExchangePaths: two directories swap names in one step; a missing one is named",
          "[base][file]") {
  fs::path dir =
      fs::temp_directory_path() / ("base-exchange-" + std::to_string(::getpid()));
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  std::ofstream((dir / "a" / "f").string()) << "in a";
  std::ofstream((dir / "b" / "f").string()) << "in b";
  REQUIRE(ExchangePaths((dir / "a").string(), (dir / "b").string()).ok());
  CHECK(Read((dir / "a" / "f").string()) == "in b");
  CHECK(Read((dir / "b" / "f").string()) == "in a");
  // Nothing to swap with: an I/O error naming both paths, and `a` unchanged.
  Status st = ExchangePaths((dir / "a").string(), (dir / "none").string());
  CHECK(st.code() == Status::Code::kIoError);
  CHECK(st.message().find((dir / "none").string()) != std::string::npos);
  CHECK(Read((dir / "a" / "f").string()) == "in b");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace crawler
