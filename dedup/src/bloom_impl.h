// Blocked Bloom and blocked counting-Bloom layers: the hot math, no I/O.
//
// Design note (Putze, Sanders, Singler 2007, "Cache-, Hash- and Space-Efficient
// Bloom Filters"). A layer is an array of blocks of B cells, B = 512 (one
// 64-byte line of bits) or 1024 (a 128-byte aligned pair of lines, prefetched
// together). A key picks one block from hash.lo and sets k cells inside it
// chosen by enhanced double hashing. One insert or lookup therefore touches
// one line (or pair) instead of k random lines, and can be prefetched.
//
// False-positive rate. With c = bits per item, a block holds Poisson(B/c)
// items, and
//     FPR(B, c, k) = sum_i Poisson(i; B/c) * (1 - (1 - 1/B)^(i k))^k,
// which is above the classic (1 - e^(-k/c))^k because blocks fill unevenly.
// The overhead is small at 1% (9.90 vs 9.59 bits/key for B = 512) and grows as
// the target tightens (17.3 vs 15.8 at 0.05%, 16.6 with B = 1024). Each layer
// takes B = 512 when that is within 3.5% of the classic filter's bits, else
// 1024, and the k that minimises bits (sizing.cc). Blocks of 2048+ bits would
// save another ~0.5 bit/key on tight layers but touch 4+ lines per probe,
// which halved chain insert speed when measured. Layers are sized for
// 0.97 x their error target so that a layer filled exactly to capacity
// measures below the target with > 3 sigma to spare at 10^6 probes; this
// costs 0.06 bits/key.
//
// Counting variant: identical geometry with 4-bit saturating counters, so it
// pays exactly 4x the bloom variant's bits. A counter that reaches 15 stays 15
// forever (it can no longer tell how many keys share it). Erasing a key that
// was never inserted but tests positive decrements other keys' counters and can
// make them false negatives: erase only what you inserted.
//
// Thread-compatibility: the owning stripe's lock guards every write; Contains
// may run concurrently with a writer (cells are relaxed atomic bytes).
#ifndef DEDUP_BLOOM_IMPL_H_
#define DEDUP_BLOOM_IMPL_H_

#include <cstdint>

#include "aligned_buffer.h"
#include "dedup/hash.h"

namespace crawler::dedup {

struct BlockedGeometry {
  uint32_t block_bits = 512;  // cells per block, power of two
  uint32_t k = 7;             // cells set per key
  double bits_per_item = 0;   // cells per item (times cell width gives bits)
};

// Smallest-memory geometry whose FPR at full capacity is <= 0.97 * error.
// Memoised; thread-safe.
BlockedGeometry BlockedGeometryFor(double error);

// The formula above.
double BlockedBloomFpr(uint32_t block_bits, double bits_per_item, uint32_t k);

// Iterates the k in-block positions of a hash: enhanced double hashing
// (Dillinger & Manolios 2004: the stride itself advances by i positions, so a
// stride that shares factors with B does not cycle) in 64-bit fixed point,
// each position being the top log2(B) bits.
// a = the 48 in-layer bits of hash.hi; b = hash.lo remixed, so its top bits
// do not repeat the block choice (which comes from lo's top bits). With only
// 24-bit a and b, in-block patterns repeat often enough to raise the FPR by
// ~4% over the formula; 64-bit state brings it back to the formula.
class ProbeSequence {
 public:
  ProbeSequence(const KeyHash& h, uint32_t block_bits)
      : a_(h.hi << 16),
        b_(h.lo * 0x9E3779B97F4A7C15ULL | 1),  // 2^64 / golden ratio; odd
        shift_(64 - static_cast<unsigned>(__builtin_ctz(block_bits))) {}
  uint32_t Next() {
    auto pos = static_cast<uint32_t>(a_ >> shift_);
    a_ += b_;
    b_ += ++i_ << shift_;  // advance the stride by i whole positions
    return pos;
  }

 private:
  uint64_t a_, b_;
  unsigned shift_;
  uint64_t i_ = 0;
};

// kCellBits = 1: Bloom bits. kCellBits = 4: counting-Bloom counters.
template <unsigned kCellBits>
class BlockedLayer {
 public:
  static_assert(kCellBits == 1 || kCellBits == 4);
  static constexpr uint32_t kMaxCounter = (1u << kCellBits) - 1;

  BlockedLayer() = default;
  BlockedLayer(uint64_t capacity, double error) : capacity_(capacity), error_(error) {
    BlockedGeometry g = BlockedGeometryFor(error);
    block_bits_ = g.block_bits;
    k_ = g.k;
    double cells = static_cast<double>(capacity) * g.bits_per_item;
    blocks_ = static_cast<uint64_t>(cells / block_bits_) + 1;
    data_ = AlignedBuffer(BlockBytes() * blocks_);
  }
  // From decoded parts (format.cc validates them first).
  BlockedLayer(uint64_t capacity, double error, uint32_t block_bits, uint32_t k,
               uint64_t blocks, uint64_t items, uint64_t nonzero, AlignedBuffer data)
      : capacity_(capacity),
        error_(error),
        block_bits_(block_bits),
        k_(k),
        blocks_(blocks),
        data_(std::move(data)),
        items_(items),
        nonzero_(nonzero) {}

  BlockedLayer(BlockedLayer&&) noexcept = default;
  BlockedLayer& operator=(BlockedLayer&&) noexcept = default;

  size_t BlockBytes() const { return block_bits_ * kCellBits / 8; }

  void Prefetch(const KeyHash& h) const {
    const uint8_t* block = Block(h);
    for (size_t line = 0; line < BlockBytes(); line += 64) PrefetchLine(block + line);
  }

  // The lock holder's lookup (cuckoo_impl.h reads differently under the lock).
  bool ContainsLocked(const KeyHash& h) const { return Contains(h); }
  bool Contains(const KeyHash& h) const {
    const uint8_t* block = Block(h);
    ProbeSequence probes(h, block_bits_);
    if constexpr (kCellBits == 1) {
      // Branch-free: for an absent key the first zero bit is at a random
      // probe, so an early exit costs a mispredicted branch per layer, while
      // all k bits sit in one or two lines already loaded. (Measured: batch
      // negative lookups 19-30 -> 35 Mops/s at 10^7 keys.)
      uint32_t all = 1;
      for (uint32_t i = 0; i < k_; ++i) all &= Get(block, probes.Next()) != 0;
      return all != 0;
    } else {
      // Counters spread a block over 4-8 lines: stop at the first zero.
      for (uint32_t i = 0; i < k_; ++i) {
        if (Get(block, probes.Next()) == 0) return false;
      }
      return true;
    }
  }

  // Adds the key unless all its cells are already nonzero (present, or a false
  // positive). Returns true iff added. Bloom: one pass does test and set.
  // `saturations` counts counters that reach the maximum.
  bool AddIfAbsent(const KeyHash& h, uint64_t* saturations) {
    uint8_t* block = Block(h);
    if constexpr (kCellBits == 1) {
      // Read first, write only a new key's block. Most keys a crawler offers
      // are duplicates, and a store dirties its page even when no bit
      // changes: while a forked checkpoint writer shares the filter, every
      // such store is a copy-on-write fault plus a TLB shootdown (measured:
      // the crawl fell from 2,273 to 218 pages/s during a 1.4 GB checkpoint).
      // It also keeps duplicate checks from bouncing cache lines between cores.
      if (Contains(h)) return false;
      // Branch-free: at half fill every "was it set?" test is a coin flip the
      // branch predictor would lose.
      ProbeSequence probes(h, block_bits_);
      uint32_t newly_set = 0;
      for (uint32_t i = 0; i < k_; ++i) {
        uint32_t pos = probes.Next();
        uint8_t* byte = &block[pos >> 3];
        auto bit = static_cast<uint8_t>(1u << (pos & 7));
        uint8_t old = Load(byte);
        newly_set += (old & bit) == 0;
        Store(byte, static_cast<uint8_t>(old | bit));
      }
      nonzero_ += newly_set;
      items_ += newly_set != 0;
      return newly_set != 0;
    } else {
      if (Contains(h)) return false;
      AddCounters(block, h, saturations);
      return true;
    }
  }

  // Adds one copy of the key even if it tests present: a rebuild from a hash
  // log, where a later erase must find the key's own copy, not a twin's.
  // Bloom: as AddIfAbsent.
  void Add(const KeyHash& h, uint64_t* saturations) {
    if constexpr (kCellBits == 1) {
      AddIfAbsent(h, saturations);
    } else {
      AddCounters(Block(h), h, saturations);
    }
  }

  // Counting: removes one key whose cells are all nonzero. Bloom: returns false.
  bool Remove(const KeyHash& h) {
    if constexpr (kCellBits == 1) {
      (void)h;
      return false;
    } else {
      if (!Contains(h)) return false;
      uint8_t* block = Block(h);
      ProbeSequence probes(h, block_bits_);
      for (uint32_t i = 0; i < k_; ++i) {
        uint32_t pos = probes.Next();
        uint32_t c = Get(block, pos);
        if (c == kMaxCounter) continue;
        Set(block, pos, c - 1);
        if (c == 1) --nonzero_;
      }
      if (items_ > 0) --items_;
      return true;
    }
  }

  bool Full() const { return items_ >= capacity_; }
  double Fill() const {
    return static_cast<double>(nonzero_) / static_cast<double>(Cells());
  }
  double EstimatedFpr() const {
    if (items_ == 0) return 0;
    double bits_per_item = static_cast<double>(Cells()) / static_cast<double>(items_);
    return BlockedBloomFpr(block_bits_, bits_per_item, k_);
  }

  uint64_t Cells() const { return blocks_ * block_bits_; }
  uint64_t capacity() const { return capacity_; }
  double error() const { return error_; }
  uint32_t block_bits() const { return block_bits_; }
  uint32_t k() const { return k_; }
  uint64_t blocks() const { return blocks_; }
  uint64_t items() const { return items_; }
  uint64_t nonzero() const { return nonzero_; }
  uint64_t relocations() const { return 0; }
  const AlignedBuffer& data() const { return data_; }
  uint64_t Bytes() const { return data_.held() + sizeof(*this); }

 private:
  const uint8_t* Block(const KeyHash& h) const {
    return data_.data() + FastRange64(h.lo, blocks_) * BlockBytes();
  }
  uint8_t* Block(const KeyHash& h) {
    return data_.data() + FastRange64(h.lo, blocks_) * BlockBytes();
  }
  // Cells are read and written as relaxed atomic bytes: the stripe lock
  // orders writers, and lock-free lookups (striped_filter.h) read while a
  // writer stores. On x86 these are plain byte moves.
  static uint8_t Load(const uint8_t* byte) {
    return __atomic_load_n(byte, __ATOMIC_RELAXED);
  }
  static void Store(uint8_t* byte, uint8_t value) {
    __atomic_store_n(byte, value, __ATOMIC_RELAXED);
  }
  static uint32_t Get(const uint8_t* block, uint32_t pos) {
    if constexpr (kCellBits == 1) {
      return (Load(&block[pos >> 3]) >> (pos & 7)) & 1u;
    } else {
      return (Load(&block[pos >> 1]) >> ((pos & 1) * 4)) & 0xFu;
    }
  }
  static void Set(uint8_t* block, uint32_t pos, uint32_t value) {  // counters only
    uint8_t* byte = &block[pos >> 1];
    unsigned shift = (pos & 1) * 4;
    Store(byte, static_cast<uint8_t>((Load(byte) & ~(0xFu << shift)) | (value << shift)));
  }

  void AddCounters(uint8_t* block, const KeyHash& h, uint64_t* saturations) {
    ProbeSequence probes(h, block_bits_);
    for (uint32_t i = 0; i < k_; ++i) {
      uint32_t pos = probes.Next();
      uint32_t c = Get(block, pos);
      if (c == kMaxCounter) continue;  // saturated: stays forever
      if (c == 0) ++nonzero_;
      Set(block, pos, c + 1);
      if (c + 1 == kMaxCounter) ++*saturations;
    }
    ++items_;
  }

  uint64_t capacity_ = 0;
  double error_ = 0;
  uint32_t block_bits_ = 512;
  uint32_t k_ = 1;
  uint64_t blocks_ = 0;
  AlignedBuffer data_;
  // Written by every insert: a line of their own, so a lock-free lookup on
  // another core reading the fields above does not pull the line away from
  // the inserting core (2-thread single-key inserts measured 9.6 Mops/s with
  // them on one line; see docs/benchmarks.md, dedup_bench).
  alignas(64) uint64_t items_ = 0;  // keys added (each counted once)
  uint64_t nonzero_ = 0;            // set bits / nonzero counters
};

using BloomLayer = BlockedLayer<1>;
using CountingLayer = BlockedLayer<4>;

}  // namespace crawler::dedup

#endif  // DEDUP_BLOOM_IMPL_H_
