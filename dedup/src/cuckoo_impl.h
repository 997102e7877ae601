// Cuckoo filter layer: the hot math, no I/O.
//
// Design note (Fan, Andersen, Kaminsky, Mitzenmacher 2014, "Cuckoo Filter:
// Practically Better Than Bloom"). A table of m buckets x 4 slots holds f-bit
// fingerprints (0 = empty). A key's fingerprint fp comes from hash.hi, its
// first bucket i1 from hash.lo; its second bucket is
//     i2 = (H(fp) - i1) mod m,   H(fp) = FastRange(fp * golden, m)
// which is an involution for ANY m (i1 = (H(fp) - i2) mod m), so the table is
// sized to the capacity instead of being rounded up to a power of two as the
// XOR trick of the paper (and efficient/cuckoofilter) requires: that rounding
// is why a "12-bit" filter there can pay 20 bits/key.
//
// False positives: a lookup compares against at most 2b = 8 fingerprints, so
//     FPR ~= 1 - (1 - 1/(2^f - 1))^(8 alpha) <= 8 / 2^f    (alpha = load)
// and f = ceil(log2(2b / error)) meets the target (10 bits at 1%, 14 at
// 0.1%). RedisBloom's fixed 8-bit fingerprints give ~1.5% at b = 2 for that
// reason. Bits/key = f / alpha. 4-way buckets reach alpha = 0.95 (the paper:
// 95.5%), but the last few percent cost many kicks, each a dependent cache
// miss: measured at 10^7 keys, batch insert ran at 5.1 Mops/s with 0.72 kicks
// per insert when sized for 0.95, and 10.8 Mops/s with 0.30 kicks sized for
// 0.90. Tables are sized for alpha = 0.90: 11.1 bits/key at 1%.
//
// When 500 relocations do not find room the last evicted fingerprint stays in
// a one-entry victim slot (nothing is lost) and the layer reports Full, so the
// chain adds a new layer instead of failing. Remove deletes one copy.
//
// Thread-compatibility: the owning stripe's lock orders writers; Contains
// may run concurrently with a writer, without the lock. Slots are read and
// written as relaxed atomic 64-bit words (plain moves on x86), so a reader
// never sees a torn word. A relocation takes a fingerprint out of the table
// for a while (it is "in hand" between two buckets, or parked as the
// victim), so writers bracket every relocation with a sequence count, odd
// while one runs (a seqlock: Boehm, "Can seqlocks get along with programming
// language memory models?", 2012), and a lookup that saw the count change or
// odd reads again. A plain insert into a free slot or an erase needs no
// bracket: a lookup racing it may answer either way for that key, and no
// other fingerprint moves.
#ifndef DEDUP_CUCKOO_IMPL_H_
#define DEDUP_CUCKOO_IMPL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>

#include "aligned_buffer.h"
#include "dedup/hash.h"

namespace crawler::dedup {

class CuckooLayer {
 public:
  static constexpr uint32_t kSlots = 4;
  static constexpr uint32_t kMaxKicks = 500;
  static constexpr double kTargetLoad = 0.90;
  static constexpr uint32_t kMaxFingerprintBits = 32;

  static uint32_t FingerprintBitsFor(double error) {
    double f = std::ceil(std::log2(2.0 * kSlots / error));
    return static_cast<uint32_t>(std::clamp(f, 4.0, double{kMaxFingerprintBits}));
  }

  CuckooLayer() = default;
  CuckooLayer(uint64_t capacity, double error) : capacity_(capacity), error_(error) {
    fp_bits_ = FingerprintBitsFor(error);
    buckets_ = static_cast<uint64_t>(
        std::ceil(static_cast<double>(capacity) / (kSlots * kTargetLoad)));
    if (buckets_ < 1) buckets_ = 1;
    data_ = AlignedBuffer(DataBytes(buckets_, fp_bits_));
  }
  // From decoded parts (format.cc validates them first).
  CuckooLayer(uint64_t capacity, double error, uint32_t fp_bits, uint64_t buckets,
              uint64_t items, bool full, uint32_t victim_fp, uint64_t victim_bucket,
              uint64_t relocations, AlignedBuffer data)
      : capacity_(capacity),
        error_(error),
        fp_bits_(fp_bits),
        buckets_(buckets),
        data_(std::move(data)),
        items_(items),
        full_(full),
        victim_fp_(victim_fp),
        victim_bucket_(victim_bucket),
        relocations_(relocations) {}
  CuckooLayer(CuckooLayer&&) noexcept = default;
  CuckooLayer& operator=(CuckooLayer&&) noexcept = default;

  // Packed f-bit slots plus 8 bytes so every slot can be read with one
  // unaligned 64-bit load.
  static uint64_t DataBytes(uint64_t buckets, uint32_t fp_bits) {
    return (buckets * kSlots * fp_bits + 7) / 8 + 8;
  }

  // Both candidate buckets: a lookup of an absent key reads both.
  void Prefetch(const KeyHash& h) const {
    uint64_t i1 = Bucket1(h);
    PrefetchLine(data_.data() + (i1 * kSlots * fp_bits_ >> 3));
    PrefetchLine(data_.data() + (AltBucket(i1, Fingerprint(h)) * kSlots * fp_bits_ >> 3));
  }

  // Safe without the lock (see the top): retried while a relocation runs.
  bool Contains(const KeyHash& h) const {
    const uint32_t fp = Fingerprint(h);
    const uint64_t i1 = Bucket1(h);
    const uint64_t i2 = AltBucket(i1, fp);
    for (uint32_t spins = 0;; ++spins) {
      const uint64_t before = __atomic_load_n(&seq_, __ATOMIC_ACQUIRE);
      if ((before & 1) == 0) {
        const bool found = Find<true>(i1, fp) >= 0 || Find<true>(i2, fp) >= 0 ||
                           (Load(&victim_fp_) == fp &&
                            (Load(&victim_bucket_) == i1 || Load(&victim_bucket_) == i2));
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&seq_, __ATOMIC_RELAXED) == before) return found;
      }
      // A relocation is at most kMaxKicks steps; past a few hundred spins
      // its writer was probably preempted (2 cores), so let it run.
      if (spins > 256) std::this_thread::yield();
    }
  }
  // As Contains, for the lock holder: no writer can run, so plain reads.
  bool ContainsLocked(const KeyHash& h) const {
    const uint32_t fp = Fingerprint(h);
    const uint64_t i1 = Bucket1(h);
    if (FindSlot(i1, fp) >= 0) return true;
    const uint64_t i2 = AltBucket(i1, fp);
    if (FindSlot(i2, fp) >= 0) return true;
    return victim_fp_ == fp && (victim_bucket_ == i1 || victim_bucket_ == i2);
  }

  // REQUIRES: !Full(). Adds the key's fingerprint unless present. Returns true
  // iff added (always, unless present: a failed relocation parks a victim).
  bool AddIfAbsent(const KeyHash& h, uint64_t* saturations) {
    if (ContainsLocked(h)) return false;
    Add(h, saturations);
    return true;
  }

  // REQUIRES: !Full(). Adds one copy of the key's fingerprint even if it is
  // present: a rebuild from a hash log, where a later erase must find the
  // key's own copy, not a twin's.
  void Add(const KeyHash& h, uint64_t* /*saturations*/) {
    uint32_t fp = Fingerprint(h);
    uint64_t i = Bucket1(h);
    ++items_;
    if (PutInFreeSlot(i, fp)) return;
    i = AltBucket(i, fp);
    if (PutInFreeSlot(i, fp)) return;
    Relocating relocating(this);
    for (uint32_t kick = 0; kick < kMaxKicks; ++kick) {
      uint32_t slot = static_cast<uint32_t>(NextRandom() % kSlots);
      uint32_t evicted = GetSlot(i, slot);
      SetSlot(i, slot, fp);
      fp = evicted;
      i = AltBucket(i, fp);
      ++relocations_;
      if (PutInFreeSlot(i, fp)) return;
    }
    Store(&victim_bucket_, i);
    Store(&victim_fp_, fp);
    full_ = true;
  }

  bool Remove(const KeyHash& h) {
    uint32_t fp = Fingerprint(h);
    uint64_t i1 = Bucket1(h);
    uint64_t i2 = AltBucket(i1, fp);
    for (uint64_t b : {i1, i2}) {
      int slot = FindSlot(b, fp);
      if (slot >= 0) {
        SetSlot(b, static_cast<uint32_t>(slot), 0);
        --items_;
        ReinsertVictim();
        return true;
      }
    }
    if (victim_fp_ == fp && (victim_bucket_ == i1 || victim_bucket_ == i2)) {
      Store(&victim_fp_, 0u);
      --items_;
      full_ = false;
      return true;
    }
    return false;
  }

  bool Full() const { return full_ || items_ >= capacity_; }
  double Fill() const {
    return static_cast<double>(items_) / static_cast<double>(buckets_ * kSlots);
  }
  double EstimatedFpr() const {
    double one = 1.0 / (std::ldexp(1.0, static_cast<int>(fp_bits_)) - 1);
    return -std::expm1(2.0 * kSlots * Fill() * std::log1p(-one));
  }

  uint64_t capacity() const { return capacity_; }
  double error() const { return error_; }
  uint32_t fp_bits() const { return fp_bits_; }
  uint64_t buckets() const { return buckets_; }
  uint64_t items() const { return items_; }
  bool full_flag() const { return full_; }
  uint32_t victim_fp() const { return victim_fp_; }
  uint64_t victim_bucket() const { return victim_bucket_; }
  uint64_t relocations() const { return relocations_; }
  const AlignedBuffer& data() const { return data_; }
  uint64_t Bytes() const { return data_.held() + sizeof(*this); }

 private:
  uint32_t Fingerprint(const KeyHash& h) const {
    uint32_t mask = fp_bits_ == 32 ? 0xFFFFFFFFu : (1u << fp_bits_) - 1;
    // Non-zero: 0 marks an empty slot. Modulo by 2^f - 1 keeps it uniform.
    return static_cast<uint32_t>(static_cast<uint32_t>(h.hi) % mask) + 1;
  }
  uint64_t Bucket1(const KeyHash& h) const { return FastRange64(h.lo, buckets_); }
  uint64_t AltBucket(uint64_t i, uint32_t fp) const {
    uint64_t hf =
        FastRange64(fp * 0x9E3779B97F4A7C15ULL, buckets_);  // 2^64 / golden ratio
    return hf >= i ? hf - i : hf + buckets_ - i;
  }

  // Slot bits are little-endian from the start of the table (the file
  // format's layout); a slot may straddle two aligned 64-bit words.
  //
  // Two reads. The lock holder's (kAtomic false): one unaligned 64-bit load
  // (the table has 8 spare bytes at its end for it). A lock-free reader's:
  // the two aligned words around the slot, as relaxed atomic loads, combined
  // without a branch (whether a slot straddles is random, and a branch on it
  // cost lookups ~35% on a 7-layer chain). The second word's index is capped
  // at the table's last whole word; bits that straddle never need the cap
  // (both their words hold data bits).
  // The `width` bits from the slot's first, in the low bits (width <= 57 for
  // the unaligned read; the atomic one takes up to 64).
  template <bool kAtomic>
  uint64_t Get(uint64_t bucket, uint32_t slot, uint32_t width) const {
    const uint64_t bit = (bucket * kSlots + slot) * fp_bits_;
    const uint64_t mask = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
    if constexpr (!kAtomic) {
      uint64_t word;
      std::memcpy(&word, data_.data() + (bit >> 3), sizeof(word));
      return (word >> (bit & 7)) & mask;
    } else {
      const uint64_t* words = reinterpret_cast<const uint64_t*>(data_.data());
      const uint64_t w = bit >> 6;
      const uint32_t shift = bit & 63;
      const uint64_t lo = Load(words + w);
      const uint64_t hi = Load(words + std::min(w + 1, data_.size() / 8 - 1));
      // hi << (64 - shift), and 0 when shift is 0, without an undefined shift.
      return ((lo >> shift) | ((hi << 1) << (63 - shift))) & mask;
    }
  }
  template <bool kAtomic>
  uint32_t Get(uint64_t bucket, uint32_t slot) const {
    return static_cast<uint32_t>(Get<kAtomic>(bucket, slot, fp_bits_));
  }
  uint32_t GetSlot(uint64_t bucket, uint32_t slot) const {
    return Get<false>(bucket, slot);
  }
  void SetSlot(uint64_t bucket, uint32_t slot, uint32_t fp) {
    const uint64_t bit = (bucket * kSlots + slot) * fp_bits_;
    uint64_t* w = reinterpret_cast<uint64_t*>(data_.data()) + (bit >> 6);
    const uint32_t shift = bit & 63;
    const uint64_t mask = (uint64_t{1} << fp_bits_) - 1;
    Store(w, (*w & ~(mask << shift)) | (uint64_t{fp} << shift));
    if (shift + fp_bits_ > 64) {
      Store(w + 1, (w[1] & ~(mask >> (64 - shift))) | (uint64_t{fp} >> (64 - shift)));
    }
  }
  template <typename T>
  static T Load(const T* p) {
    return __atomic_load_n(p, __ATOMIC_RELAXED);
  }
  template <typename T>
  static void Store(T* p, T value) {
    __atomic_store_n(p, value, __ATOMIC_RELAXED);
  }
  // Makes the sequence count odd for its life (one writer: the lock holder).
  class Relocating {
   public:
    explicit Relocating(CuckooLayer* layer) : seq_(&layer->seq_) {
      __atomic_store_n(seq_, *seq_ + 1, __ATOMIC_RELAXED);
      __atomic_thread_fence(__ATOMIC_RELEASE);  // odd before any slot moves
    }
    ~Relocating() { __atomic_store_n(seq_, *seq_ + 1, __ATOMIC_RELEASE); }
    Relocating(const Relocating&) = delete;
    Relocating& operator=(const Relocating&) = delete;

   private:
    uint64_t* seq_;
  };
  template <bool kAtomic>
  int Find(uint64_t bucket, uint32_t fp) const {
    if (kAtomic && fp_bits_ * kSlots <= 64) {
      // The whole bucket from one pair of loads, not a pair per slot: on a
      // 7-layer chain, lookups per slot ran at 60% of the locked reads'.
      const uint64_t bits = Get<true>(bucket, 0, 64);
      const uint64_t mask = (uint64_t{1} << fp_bits_) - 1;
      for (uint32_t s = 0; s < kSlots; ++s) {
        if (((bits >> (s * fp_bits_)) & mask) == fp) return static_cast<int>(s);
      }
      return -1;
    }
    for (uint32_t s = 0; s < kSlots; ++s) {
      if (Get<kAtomic>(bucket, s) == fp) return static_cast<int>(s);
    }
    return -1;
  }
  int FindSlot(uint64_t bucket, uint32_t fp) const { return Find<false>(bucket, fp); }

  bool PutInFreeSlot(uint64_t bucket, uint32_t fp) {
    int slot = FindSlot(bucket, 0);
    if (slot < 0) return false;
    SetSlot(bucket, static_cast<uint32_t>(slot), fp);
    return true;
  }
  void ReinsertVictim() {
    if (victim_fp_ == 0) return;
    // Bracketed: a lookup could read the buckets before the victim lands
    // and the victim slot after it was cleared.
    Relocating relocating(this);
    if (PutInFreeSlot(victim_bucket_, victim_fp_) ||
        PutInFreeSlot(AltBucket(victim_bucket_, victim_fp_), victim_fp_)) {
      Store(&victim_fp_, 0u);
      full_ = false;
    }
  }
  uint64_t NextRandom() {  // xorshift64: cheap, and fine for choosing a slot
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    return rng_;
  }

  uint64_t capacity_ = 0;
  double error_ = 0;
  uint32_t fp_bits_ = 8;
  uint64_t buckets_ = 1;
  AlignedBuffer data_;
  // Written by inserts: a line of their own (as in bloom_impl.h).
  alignas(64) uint64_t items_ = 0;  // fingerprints stored, victim included
  bool full_ = false;               // a relocation failed; victim_fp_ holds the leftover
  uint32_t victim_fp_ = 0;
  uint64_t victim_bucket_ = 0;
  uint64_t relocations_ = 0;  // kicks over the layer's life
  uint64_t rng_ = 0x2545F4914F6CDD1DULL;
  // The seqlock's count (see the top): read by lookups, written only by
  // relocations, so a line of its own.
  alignas(64) uint64_t seq_ = 0;
};

}  // namespace crawler::dedup

#endif  // DEDUP_CUCKOO_IMPL_H_
