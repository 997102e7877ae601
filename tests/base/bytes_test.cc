// base/bytes.h: the one little-endian codec, pinned with golden bytes.
#include "base/bytes.h"

#include <catch2/catch.hpp>
#include <string>

namespace crawler {
namespace {

TEST_CASE(
    "ByteWriter: integers little-endian whatever the host, doubles as their bits, "
    "strings length-prefixed",
    "[base][bytes]") {
  ByteWriter w;
  w.U8(0xAB);
  w.U32(0x01020304);
  w.U64(0x1122334455667788ULL);
  w.F64(1.0);
  w.Str("hi");
  const std::string golden = std::string("\xAB", 1) + std::string("\x04\x03\x02\x01", 4) +
                             std::string("\x88\x77\x66\x55\x44\x33\x22\x11", 8) +
                             std::string("\x00\x00\x00\x00\x00\x00\xF0\x3F", 8) +
                             std::string("\x02\x00\x00\x00hi", 6);
  CHECK(std::string(w.view()) == golden);
  CHECK(w.size() == golden.size());

  ByteReader r(golden);
  CHECK(r.U8() == 0xAB);
  CHECK(r.U32() == 0x01020304u);
  CHECK(r.U64() == 0x1122334455667788ULL);
  CHECK(r.F64() == 1.0);
  CHECK(r.Str() == "hi");
  CHECK(r.ok());
  CHECK(r.AtEnd());
}

TEST_CASE("ByteReader: a read past the end fails stickily and returns zeros",
          "[base][bytes]") {
  const std::string three("\x01\x02\x03", 3);
  ByteReader r(three);
  CHECK(r.U32() == 0);
  CHECK_FALSE(r.ok());
  CHECK(r.U8() == 0);  // sticky: even a read that would fit fails now
  CHECK_FALSE(r.ok());

  // A string whose length runs past the end.
  const std::string bad(
      "\xFF\x00\x00\x00"
      "abc",
      7);
  ByteReader s(bad);
  CHECK(s.Str().empty());
  CHECK_FALSE(s.ok());
}

TEST_CASE("ByteWriter::Clear empties the buffer for reuse", "[base][bytes]") {
  ByteWriter w;
  w.U64(7);
  w.Clear();
  CHECK(w.view().empty());
  CHECK(w.size() == 0);
  w.U8(1);
  CHECK(w.view() == std::string_view("\x01", 1));
}

}  // namespace
}  // namespace crawler
