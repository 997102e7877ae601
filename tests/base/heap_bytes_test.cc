// base/heap_bytes.h: what the stats report's memory parts are counted with.
// This program runs on glibc's malloc (or a sanitizer's): the glibc rule.
// tests/bench/memory_bench.cc sets the counts against jemalloc's own.
#include "base/heap_bytes.h"

#include <malloc.h>

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace crawler {
namespace {

TEST_CASE("HeapBytes: each buffer and node at the size its allocation takes",
          "[base][memory]") {
  namespace hb = heap_bytes;
  CHECK(hb::Alloc(0) == 0);
  CHECK(hb::Alloc(1) == 32);     // glibc's smallest chunk
  CHECK(hb::Alloc(101) == 112);  // 101 + an 8-byte header, in 16s
  // A string within its inline buffer holds no heap; past it, its capacity
  // and the terminator.
  CHECK(hb::Of(std::string("short")) == 0);
  std::string long_one(100, 'x');
  CHECK(hb::Of(long_one) == hb::Alloc(long_one.capacity() + 1));
  CHECK(hb::Of(long_one) >= 101);

  std::vector<uint64_t> v;
  CHECK(hb::Buffer(v) == 0);
  v.reserve(10);
  CHECK(hb::Buffer(v) == hb::Alloc(80));

  // Nodes grow with the elements, by one node each.
  std::map<uint32_t, uint64_t> m;
  CHECK(hb::Nodes(m) == 0);
  m[1] = 1;
  const size_t one = hb::Nodes(m);
  m[2] = 2;
  CHECK(hb::Nodes(m) == 2 * one);
  CHECK(one >= 32 + sizeof(std::pair<const uint32_t, uint64_t>));

  std::unordered_map<std::string, int> u;
  for (int i = 0; i < 1000; ++i) u[std::to_string(i)] = i;
  // Buckets (one pointer each) and a node per element (next, value, hash).
  CHECK(hb::Nodes(u) >=
        u.bucket_count() * sizeof(void*) +
            1000 * (sizeof(void*) + sizeof(std::pair<const std::string, int>) +
                    sizeof(size_t)));
}

TEST_CASE("HeapBytes: the counts of a string and a vector are what malloc says they took",
          "[base][memory][no-sanitizers]") {
  // [no-sanitizers]: a sanitizer's allocator rounds by rules of its own.
  std::string s(1000, 'x');
  std::vector<uint64_t> v(500);
  // malloc_usable_size: the chunk's size less its 8-byte header.
  CHECK(heap_bytes::Of(s) == ::malloc_usable_size(s.data()) + 8);
  CHECK(heap_bytes::Buffer(v) == ::malloc_usable_size(v.data()) + 8);
}

}  // namespace
}  // namespace crawler
