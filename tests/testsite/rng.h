// splitmix64: the tiny, well-mixed deterministic generator behind both of
// the testsite's webs (site.h, web.h): the same seed, the same web.
#ifndef TESTS_TESTSITE_RNG_H_
#define TESTS_TESTSITE_RNG_H_

#include <cstdint>

namespace crawler::testsite {

struct SplitMix64 {
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint32_t Below(uint32_t n) { return n == 0 ? 0 : static_cast<uint32_t>(Next() % n); }
  // A uniform draw in [0, 1).
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1p-53; }
};

}  // namespace crawler::testsite

#endif  // TESTS_TESTSITE_RNG_H_
