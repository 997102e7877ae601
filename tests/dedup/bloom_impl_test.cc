// White-box tests of the layer math (dedup/src/bloom_impl.h, cuckoo_impl.h):
// counter saturation, geometry choice, the FPR formula, the cuckoo alternate
// bucket involution for any bucket count.
#include "bloom_impl.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "cuckoo_impl.h"

namespace crawler::dedup {
namespace {

// Hashes that land in block 0 (small lo) with the same first probe (the top
// bits of the in-layer hi bits) but different strides (taken from lo), so they
// share exactly one counter.
KeyHash SharedFirstProbe(uint32_t stride) { return KeyHash{stride, uint64_t{5} << 39}; }

TEST_CASE("Counting: a counter saturates at 15 and never decrements after",
          "[dedup][counting]") {
  CountingLayer layer(1000, 0.01);
  uint64_t saturations = 0;
  for (uint32_t s = 1; s <= 20; ++s)
    REQUIRE(layer.AddIfAbsent(SharedFirstProbe(s), &saturations));
  CHECK(saturations == 1);  // the shared counter hit 15 once; others stay low
  for (uint32_t s = 1; s <= 20; ++s) CHECK(layer.Remove(SharedFirstProbe(s)));
  // Every counter went back to zero except the saturated one.
  CHECK(layer.nonzero() == 1);
  CHECK(layer.items() == 0);
}

TEST_CASE("Blocked geometry: 1% fits one cache line at < 10 bits/key",
          "[dedup][sizing]") {
  BlockedGeometry g = BlockedGeometryFor(0.01);
  CHECK(g.block_bits == 512);
  CHECK(g.bits_per_item < 10.0);
  CHECK(g.bits_per_item > 9.59);  // the classic optimum -log2(0.01)/ln 2 is a floor
  CHECK(BlockedBloomFpr(g.block_bits, g.bits_per_item, g.k) <= 0.01 * 0.97 + 1e-9);
  // Tighter targets move to a pair of lines, which keeps within 6% of classic.
  BlockedGeometry tight = BlockedGeometryFor(0.0005);
  CHECK(tight.block_bits == 1024);
  CHECK(tight.bits_per_item <= -std::log2(0.0005 * 0.97) / std::log(2.0) * 1.06);
}

TEST_CASE("Blocked FPR formula tends to the classic one for huge blocks",
          "[dedup][sizing]") {
  // With B -> large, block loads concentrate and the formula approaches
  // (1 - e^{-k/c})^k.
  double classic = std::pow(1 - std::exp(-7.0 / 10.0), 7);
  CHECK(BlockedBloomFpr(1u << 20, 10.0, 7) == Approx(classic).epsilon(0.01));
  CHECK(BlockedBloomFpr(512, 10.0, 7) > classic);
}

TEST_CASE("Cuckoo: the alternate bucket is an involution for any bucket count",
          "[dedup][cuckoo]") {
  for (uint64_t capacity : {1ull, 7ull, 1000ull, 12345ull}) {
    CuckooLayer layer(capacity, 0.01);
    uint64_t saturations = 0;
    // Fill to capacity: every key stays findable through relocations.
    for (uint64_t i = 0; i < capacity; ++i) {
      KeyHash h{i * 0x9E3779B97F4A7C15ULL, i * 0xC2B2AE3D27D4EB4FULL + 1};
      layer.AddIfAbsent(h, &saturations);
    }
    for (uint64_t i = 0; i < capacity; ++i) {
      KeyHash h{i * 0x9E3779B97F4A7C15ULL, i * 0xC2B2AE3D27D4EB4FULL + 1};
      CHECK(layer.Contains(h));
    }
  }
}

}  // namespace
}  // namespace crawler::dedup
