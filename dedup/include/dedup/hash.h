// The one hash of a dedup key, and how its 128 bits are shared out.
//
// A key (a normalized URL's bytes; the filter knows nothing more of it) is
// hashed exactly once with XXH3-128 and a fixed seed. Every structure derives
// what it needs from those bits, so no layer re-hashes the string:
//
//   hi bits 63 .. 48   stripe index (top log2(stripes) bits, at most 16)
//   hi bits 47 ..  0   Bloom/counting in-block probes (two 24-bit values for
//                      enhanced double hashing); cuckoo fingerprint (bits 31..0)
//   lo bits 63 ..  0   block (Bloom, counting) or primary bucket (cuckoo),
//                      via a multiply-shift range reduction
//
// The stripe bits are disjoint from every in-layer bit, so all stripes see
// equally distributed keys and a stripe's layers are not biased by it.
// Pure functions; any thread.
#ifndef DEDUP_HASH_H_
#define DEDUP_HASH_H_

#include <cstdint>
#include <string_view>

namespace crawler::dedup {

struct KeyHash {
  uint64_t lo = 0;
  uint64_t hi = 0;
  friend bool operator==(const KeyHash&, const KeyHash&) = default;
};

// Fixed forever: changing it changes every saved filter's meaning. The format
// version in format.h must change with it.
inline constexpr uint64_t kHashSeed = 0x63726177'6c657231ULL;  // "crawler1"

// XXH3-128 of `key` with kHashSeed.
KeyHash HashKey(std::string_view key);

// Maps a 64-bit value uniformly onto [0, n) without division (Lemire 2019).
__extension__ typedef unsigned __int128 Uint128;  // GCC/Clang builtin
inline uint64_t FastRange64(uint64_t x, uint64_t n) {
  return static_cast<uint64_t>((static_cast<Uint128>(x) * n) >> 64);
}

// Stripe of a hash among 2^stripe_bits stripes (stripe_bits <= 16).
inline uint32_t StripeOf(const KeyHash& h, unsigned stripe_bits) {
  return stripe_bits == 0 ? 0u : static_cast<uint32_t>(h.hi >> (64 - stripe_bits));
}

}  // namespace crawler::dedup

#endif  // DEDUP_HASH_H_
