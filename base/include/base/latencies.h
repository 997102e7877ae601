// Durations in buckets of a quarter power of two of microseconds (each
// bucket's upper bound at most 19% over its lower): quantiles within 19%,
// in 1 KiB whatever the count. Not thread-safe: the owner locks.
#ifndef BASE_LATENCIES_H_
#define BASE_LATENCIES_H_

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace crawler {

class Latencies {
 public:
  void Add(int64_t us) {
    double b = 4 * std::log2(static_cast<double>(std::max<int64_t>(us, 1)));
    ++buckets_[std::min<size_t>(kBuckets - 1, static_cast<size_t>(b))];
    ++n_;
  }
  // The q-quantile (0..1) in milliseconds (0: none added).
  double QuantileMs(double q) const {
    if (n_ == 0) return 0;
    uint64_t want = static_cast<uint64_t>(std::ceil(q * static_cast<double>(n_)));
    uint64_t seen = 0;
    for (size_t i = 0; i < kBuckets; ++i) {
      seen += buckets_[i];
      if (seen >= want) return std::exp2(static_cast<double>(i + 1) / 4) / 1000;
    }
    return 0;
  }
  uint64_t count() const { return n_; }

 private:
  static constexpr size_t kBuckets = 128;
  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t n_ = 0;
};

}  // namespace crawler

#endif  // BASE_LATENCIES_H_
