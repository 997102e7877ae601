// Regressions found by tests/fuzz/dedup_load_fuzz.
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "base/bytes.h"
#include "dedup/filter.h"

namespace crawler::dedup {
namespace {

TEST_CASE(
    "dedup.bin from a stream of unknown size: a huge section length is 'truncated', not "
    "a huge allocation",
    "[dedup][format][regression]") {
  // Preamble, then a HEAD section that claims 2^40 bytes but holds 8. Read
  // through fmemopen (no file descriptor), as a checkpoint reads dedup.bin
  // through its hashing FILE*: the loader cannot learn the size up front.
  ByteWriter w;
  w.Bytes(reinterpret_cast<const uint8_t*>("CRWLDDUP"), 8);
  w.U32(1);
  w.U32(0);
  w.Bytes(reinterpret_cast<const uint8_t*>("HEAD"), 4);
  w.U64(uint64_t{1} << 40);
  w.U64(0);
  std::string bytes(w.view());
  std::FILE* f = ::fmemopen(bytes.data(), bytes.size(), "rb");
  REQUIRE(f != nullptr);
  auto filter = Filter::Read(f, "dedup.bin");
  std::fclose(f);
  REQUIRE_FALSE(filter.ok());
  CHECK(filter.status().code() == Status::Code::kTruncated);
  CHECK(filter.status().message().find(
            "dedup.bin: file ends inside the header section") != std::string::npos);
}

}  // namespace
}  // namespace crawler::dedup
