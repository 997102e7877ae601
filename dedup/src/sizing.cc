// Geometry of blocked (counting) Bloom layers: see bloom_impl.h for the model.
#include <math.h>  // lgamma_r (glibc)

#include <cmath>
#include <map>
#include <mutex>

#include "bloom_impl.h"

namespace crawler::dedup {
namespace {

constexpr double kSizingMargin = 0.97;    // size for 97% of the target (bloom_impl.h)
constexpr double kBlockOverhead = 1.035;  // accept a block size within 3.5% of classic
// One 64-byte line, or an aligned pair of lines (prefetched together).
constexpr uint32_t kBlockSizes[] = {512, 1024};

double ClassicFpr(double bits_per_item, uint32_t k) {
  return std::pow(1.0 - std::exp(-static_cast<double>(k) / bits_per_item), k);
}

// Smallest bits/item (to 1e-4) at which fpr(c) <= target; fpr falls with c.
template <typename Fpr>
double MinBitsPerItem(Fpr fpr, double target) {
  double lo = 0.5, hi = 1.0;
  while (fpr(hi) > target) {
    lo = hi;
    hi *= 2;
    if (hi > 4096) return hi;  // unreachable for error >= 1e-12
  }
  while (hi - lo > 1e-4) {
    double mid = (lo + hi) / 2;
    (fpr(mid) <= target ? hi : lo) = mid;
  }
  return hi;
}

BlockedGeometry ComputeGeometry(double error) {
  const double target = error * kSizingMargin;
  // Classic optimum, for reference: c = -log2(e)/ln 2, k = c ln 2.
  double classic = 1e300;
  uint32_t classic_k = 1;
  for (uint32_t k = 1; k <= 32; ++k) {
    double c = MinBitsPerItem([k](double bits) { return ClassicFpr(bits, k); }, target);
    if (c < classic) {
      classic = c;
      classic_k = k;
    }
  }
  BlockedGeometry best;
  best.bits_per_item = 1e300;
  for (uint32_t block_bits : kBlockSizes) {
    BlockedGeometry g;
    g.block_bits = block_bits;
    g.bits_per_item = 1e300;
    // Blocking lowers the best k by a little; search a window around the classic k.
    for (uint32_t k = classic_k > 4 ? classic_k - 4 : 1; k <= classic_k + 2; ++k) {
      double c = MinBitsPerItem(
          [&](double bits) { return BlockedBloomFpr(block_bits, bits, k); }, target);
      if (c < g.bits_per_item) {
        g.bits_per_item = c;
        g.k = k;
      }
    }
    if (g.bits_per_item <= classic * kBlockOverhead) return g;
    if (g.bits_per_item < best.bits_per_item) best = g;
  }
  return best;
}

}  // namespace

double BlockedBloomFpr(uint32_t block_bits, double bits_per_item, uint32_t k) {
  const double lambda = block_bits / bits_per_item;  // mean items per block
  const double miss = std::log1p(-1.0 / block_bits);
  // Sum the Poisson terms around the mean; beyond +-12 sigma they are < 1e-30.
  const double spread = 12 * std::sqrt(lambda) + 12;
  const auto first = static_cast<uint64_t>(std::max(0.0, lambda - spread));
  const auto last = static_cast<uint64_t>(lambda + spread);
  double sum = 0;
  for (uint64_t i = first; i <= last; ++i) {
    // lgamma_r, not std::lgamma: glibc's lgamma writes the global signgam,
    // a data race between a worker growing the filter and the stats report
    // (TSan, in CI's 'Cluster join'). The sign is + here (argument >= 1).
    int sign = 0;
    double log_p = -lambda + static_cast<double>(i) * std::log(lambda) -
                   ::lgamma_r(static_cast<double>(i) + 1.0, &sign);
    double cell_set = -std::expm1(static_cast<double>(i * k) * miss);
    sum += std::exp(log_p) * std::pow(cell_set, k);
  }
  return sum;
}

BlockedGeometry BlockedGeometryFor(double error) {
  static std::mutex mu;
  static std::map<double, BlockedGeometry> cache;  // GUARDED_BY(mu)
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(error);
  if (it != cache.end()) return it->second;
  BlockedGeometry g = ComputeGeometry(error);
  cache.emplace(error, g);
  return g;
}

}  // namespace crawler::dedup
