// The on-disk format (dedup/src/format.h): golden bytes pin it; every kind of
// damage is rejected whole with its own error naming the file.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "test_util.h"

namespace crawler::dedup {
namespace {

using testing::Bloom;
using testing::Counting;
using testing::Cuckoo;
using testing::MakeFilter;
using testing::UrlKey;

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteAll(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

std::string Hex(const std::vector<uint8_t>& bytes, size_t from, size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (size_t i = from; i < from + n && i < bytes.size(); ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 15];
  }
  return out;
}

uint64_t LittleEndian64(const std::vector<uint8_t>& b, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b[at + static_cast<size_t>(i)];
  return v;
}

// Offsets of each section (tag position) in a saved file.
std::vector<size_t> SectionOffsets(const std::vector<uint8_t>& b) {
  std::vector<size_t> at;
  for (size_t pos = 16; pos + 12 <= b.size();) {
    at.push_back(pos);
    pos += 12 + LittleEndian64(b, pos + 4) + 8;
  }
  return at;
}

// The file the golden test writes, generated once from format v1; its
// preamble and header are checked field by field in the test.
constexpr const char* kGoldenBloomV1 =
    "4352574c4444555001000000000000004845414428000000000000000001000001000000"
    "04000000000000007b14ae47e17a843f0000000000000040333333333333eb3fa810476f"
    "6c2d84ad53545250e8000000000000000000000001000000020000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000400000000000000"
    "fb7e6abc7493583f00040000090000000100000000000000020000000000000012000000"
    "000000008000000000000000000000200002000000000000000082000000000000000000"
    "000009000000000000000000000004000008000000000000000002000000000000000000"
    "000000001000000000000000000000000000080000000000000000000000000000040000"
    "00400000002000040000000000008000000000800000000000010000000000006ace63c7"
    "0cc36f9b454e4421100000000000000001000000000000000200000000000000a38f34c8"
    "4e936682";

TEST_CASE("Format v1 golden bytes: a 1-stripe bloom filter holding two keys",
          "[dedup][format]") {
  FilterOptions o;
  o.capacity = 4;
  o.stripes = 1;
  o.error_rate = 0.01;
  auto f = MakeFilter(o);
  REQUIRE(f->Insert("https://a.example/"));
  REQUIRE(f->Insert("https://b.example/"));
  testing::ScratchDir dir;
  REQUIRE(f->Save(dir.File("f.bin")).ok());
  std::vector<uint8_t> b = ReadAll(dir.File("f.bin"));

  // Preamble: magic, version 1, reserved 0.
  CHECK(Hex(b, 0, 16) ==
        "4352574c44445550"
        "01000000"
        "00000000");
  // HEAD: tag, length 40, then type 0 (bloom), scaling 1, erase 0, pad,
  // stripes 1, capacity 4, error 0.01, expansion 2.0, tightening 0.85.
  CHECK(Hex(b, 16, 12) ==
        "48454144"
        "2800000000000000");
  CHECK(Hex(b, 28, 40) ==
        "00010000"
        "01000000"
        "0400000000000000"
        "7b14ae47e17a843f"
        "0000000000000040"
        "333333333333eb3f");
  std::vector<size_t> sections = SectionOffsets(b);
  REQUIRE(sections.size() == 3);
  CHECK(Hex(b, sections[1], 4) == "53545250");  // STRP
  CHECK(Hex(b, sections[2], 4) == "454e4421");  // END!
  CHECK(sections[2] + 12 + 16 + 8 == b.size());
  // The whole file, pinned. A change here is a format change: bump
  // kFormatVersion and keep a reader for version 1.
  CHECK(Hex(b, 0, b.size()) == kGoldenBloomV1);
}

TEMPLATE_TEST_CASE(
    "Damaged, truncated and foreign files are rejected whole, each with its "
    "own error naming the file",
    "[dedup][format]", Bloom, Cuckoo, Counting) {
  FilterOptions o;
  o.type = TestType::kType;
  o.capacity = 500;
  o.stripes = 4;
  auto f = MakeFilter(o);
  for (int i = 0; i < 3000; ++i) f->Insert(UrlKey(i));  // grown: several layers
  testing::ScratchDir dir;
  const std::string good = dir.File("good.bin");
  const std::string bad = dir.File("bad.bin");
  REQUIRE(f->Save(good).ok());
  const std::vector<uint8_t> bytes = ReadAll(good);
  const std::vector<size_t> sections = SectionOffsets(bytes);
  REQUIRE(sections.size() == 1 + 4 + 1);
  REQUIRE(Filter::Load(good).ok());

  auto expect = [&](const std::vector<uint8_t>& damaged, Status::Code code,
                    const std::string& words) {
    WriteAll(bad, damaged);
    auto loaded = Filter::Load(bad);
    REQUIRE_FALSE(loaded.ok());
    INFO(loaded.status().ToString());
    CHECK(loaded.status().code() == code);
    CHECK_THAT(loaded.status().message(), Catch::Contains(bad));
    CHECK_THAT(loaded.status().message(), Catch::Contains(words));
  };

  SECTION("a flipped byte anywhere in the magic, version, or a section") {
    std::vector<uint8_t> d = bytes;
    d[3] ^= 0x20;
    expect(d, Status::Code::kBadMagic, "not a dedup filter");
    d = bytes;
    d[8] = 2;
    expect(d, Status::Code::kBadVersion, "format version 2");
    d = bytes;
    d[sections[0] + 12 + 5] ^= 1;  // inside HEAD's payload
    expect(d, Status::Code::kCorruption, "checksum mismatch in the header");
    d = bytes;
    d[sections[2] + 200] ^= 0x80;  // inside stripe 1's layer data
    expect(d, Status::Code::kCorruption, "checksum mismatch in the stripe 1");
    d = bytes;
    d[bytes.size() - 3] ^= 1;  // the END! checksum itself
    expect(d, Status::Code::kCorruption, "checksum mismatch in the end");
    d = bytes;
    d[sections[3] + 4 + 6] = 0x7f;  // stripe 2's length field: absurdly large
    expect(d, Status::Code::kCorruption, "claims");
  }

  SECTION("truncated at every section boundary and inside every section") {
    std::vector<size_t> cuts = {0, 5, 12, 16, 20};
    for (size_t s : sections) {
      cuts.push_back(s);
      cuts.push_back(s + 7);
      cuts.push_back(s + 40);
    }
    cuts.push_back(bytes.size() - 1);
    for (size_t cut : cuts) {
      if (cut >= bytes.size()) continue;
      INFO("cut at " << cut << " of " << bytes.size());
      expect(std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<long>(cut)),
             Status::Code::kTruncated, "ends");
    }
  }

  SECTION("a foreign file, trailing garbage, a missing file") {
    std::vector<uint8_t> text = {'h', 'e', 'l',  'l', 'o', ' ', 'w', 'o', 'r',
                                 'l', 'd', '\n', 0,   0,   0,   0,   0};
    expect(text, Status::Code::kBadMagic, "not a dedup filter");
    std::vector<uint8_t> d = bytes;
    d.push_back(0);
    expect(d, Status::Code::kCorruption, "trailing bytes");
    auto missing = Filter::Load(dir.File("nope.bin"));
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.status().code() == Status::Code::kIoError);
    CHECK_THAT(missing.status().message(), Catch::Contains("nope.bin"));
  }

  SECTION("sections swapped: checksums pass but the order is wrong") {
    std::vector<uint8_t> d(bytes.begin(), bytes.begin() + static_cast<long>(sections[1]));
    d.insert(d.end(), bytes.begin() + static_cast<long>(sections[2]),
             bytes.begin() + static_cast<long>(sections[3]));
    d.insert(d.end(), bytes.begin() + static_cast<long>(sections[1]),
             bytes.begin() + static_cast<long>(sections[2]));
    d.insert(d.end(), bytes.begin() + static_cast<long>(sections[3]), bytes.end());
    expect(d, Status::Code::kCorruption, "section holds stripe 1");
  }

  SECTION("every single-byte flip is caught (no half-loaded filter)") {
    // Exhaustive over the non-data bytes, sampled over the data.
    std::vector<uint8_t> d = bytes;
    size_t step = bytes.size() > 4000 ? bytes.size() / 997 : 1;
    for (size_t i = 0; i < bytes.size(); i += (i < 200 ? 1 : step)) {
      d[i] ^= 0x01;
      WriteAll(bad, d);
      auto loaded = Filter::Load(bad);
      INFO("flipped byte " << i);
      CHECK_FALSE(loaded.ok());
      d[i] ^= 0x01;
    }
  }
}

TEST_CASE("Save replaces the file atomically and leaves no temp behind",
          "[dedup][format]") {
  auto f = MakeFilter(FilterOptions{});
  f->Insert("a");
  testing::ScratchDir dir;
  const std::string path = dir.File("dedup.bin");
  REQUIRE(f->Save(path).ok());
  f->Insert("b");
  REQUIRE(f->Save(path).ok());
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  auto loaded = Filter::Load(path);
  REQUIRE(loaded.ok());
  CHECK((*loaded)->Contains("b"));
  Status st = f->Save(dir.File("no/such/dir/dedup.bin"));
  CHECK(st.code() == Status::Code::kIoError);
  CHECK_THAT(st.message(), Catch::Contains("no/such/dir"));
}

}  // namespace
}  // namespace crawler::dedup

namespace crawler::dedup {
namespace {

TEST_CASE("WriteFrozen writes the same bytes as Write, for every variant",
          "[dedup][format]") {
  for (FilterType type :
       {FilterType::kBloom, FilterType::kCounting, FilterType::kCuckoo}) {
    FilterOptions o;
    o.type = type;
    o.capacity = 20'000;  // grows: several layers per stripe
    o.stripes = 4;
    auto f = std::move(Filter::Create(o)).value();
    for (int i = 0; i < 100'000; ++i) f->Insert("key-" + std::to_string(i));
    auto bytes = [&](bool frozen) {
      char* data = nullptr;
      size_t size = 0;
      std::FILE* out = open_memstream(&data, &size);
      Status st = frozen ? f->WriteFrozen(out, "mem") : f->Write(out, "mem");
      std::fclose(out);
      std::string s(data, size);
      std::free(data);
      REQUIRE(st.ok());
      return s;
    };
    std::string copied = bytes(false), frozen = bytes(true);
    CHECK(copied.size() > 100'000);
    CHECK(copied == frozen);
  }
}

}  // namespace
}  // namespace crawler::dedup
