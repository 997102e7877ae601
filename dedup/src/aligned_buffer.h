// A zero-filled, cache-line-aligned byte buffer that owns its memory.
// Used for every layer's table, so one probed block never straddles two lines.
// Not thread-safe by itself; layers guard it with their stripe's lock.
#ifndef DEDUP_ALIGNED_BUFFER_H_
#define DEDUP_ALIGNED_BUFFER_H_

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace crawler::dedup {

// Starts loading the cache line at `p`. An asm statement, not
// __builtin_prefetch: GCC 12 at -O2 and -O3 deleted the builtin from the
// lock-free batch lookup's window loop (no prefetch instruction left in the
// binary; found by objdump after batch lookups ran at 40% of the locked
// path's speed), as it may delete any call it sees no effect of.
inline void PrefetchLine(const void* p) {
#if defined(__x86_64__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

// AlignedBuffer's deleter: munmap for its own mappings, else free.
struct AlignedFree {
  size_t mapped = 0;  // > 0: an mmap of this many bytes
  void operator()(uint8_t* p) const {
    if (mapped > 0) {
      ::munmap(p, mapped);
    } else {
      std::free(p);
    }
  }
};

class AlignedBuffer {
 public:
  static constexpr size_t kAlign =
      128;  // a pair of lines: what the L2 spatial prefetcher fetches together
  static constexpr size_t kHugePage = size_t{2} << 20;
  static constexpr size_t kPage = 4096;
  static constexpr size_t kOwnMap = size_t{64} << 10;

  AlignedBuffer() = default;
  // Zero-filled (`zero` is kept for callers that overwrite every byte: big
  // buffers are fresh anonymous pages, zero anyway).
  //
  // Buffers of 2 MiB and more are mapped on their own, 2 MiB-aligned and
  // advised as transparent huge pages: a 1 GB filter then costs ~500 page
  // faults instead of ~260,000 (dear on a VM) and far fewer TLB misses on
  // random probes. The mapping ends at the size rounded up to 4 KiB, not to
  // 2 MiB: the last partial 2 MiB stays in small pages, so a 3.1 MB table
  // holds 3.1 MB, not 4 (it held 28% more than reported when rounded up).
  //
  // Buffers of 64 KiB .. 2 MiB are mapped on their own too (4 KiB pages): a
  // compaction frees a stripe's old layers, and glibc keeps freed chunks of
  // that size in its heap (its mmap threshold rises to the size of the
  // last mmapped chunk freed), so the process kept holding them: RSS at 10^7
  // keys was 2.7x the filter's bytes with compaction (dedup_bench --compact).
  explicit AlignedBuffer(size_t size, bool zero = true) : size_(size) {
    if (size == 0) return;
    if (size >= kOwnMap && size < kHugePage) {
      held_ = (size + kPage - 1) / kPage * kPage;
      void* raw = ::mmap(nullptr, held_, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (raw == MAP_FAILED) throw std::bad_alloc();
      data_.reset(static_cast<uint8_t*>(raw));
      data_.get_deleter().mapped = held_;
      return;
    }
    if (size >= kHugePage) {
      held_ = (size + kPage - 1) / kPage * kPage;
      // Over-map by 2 MiB, then unmap the unaligned head and the tail.
      void* raw = ::mmap(nullptr, held_ + kHugePage, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (raw == MAP_FAILED) throw std::bad_alloc();
      auto start = reinterpret_cast<uintptr_t>(raw);
      uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
      if (aligned > start) ::munmap(raw, aligned - start);
      uintptr_t end = start + held_ + kHugePage;
      if (end > aligned + held_)
        ::munmap(reinterpret_cast<void*>(aligned + held_), end - (aligned + held_));
      ::madvise(reinterpret_cast<void*>(aligned), held_,
                MADV_HUGEPAGE);  // advice only: failure is harmless
      data_.reset(reinterpret_cast<uint8_t*>(aligned));
      data_.get_deleter().mapped = held_;
      return;
    }
    held_ = (size + kAlign - 1) / kAlign * kAlign;
    void* p = std::aligned_alloc(kAlign, held_);
    if (p == nullptr) throw std::bad_alloc();
    if (zero) {
      std::memset(p, 0, held_);
    } else if (held_ > size) {
      std::memset(static_cast<uint8_t*>(p) + size, 0, held_ - size);
    }
    data_.reset(static_cast<uint8_t*>(p));
  }
  AlignedBuffer(AlignedBuffer&&) noexcept = default;
  AlignedBuffer& operator=(AlignedBuffer&&) noexcept = default;

  uint8_t* data() { return data_.get(); }
  const uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }
  // The bytes this buffer holds: size() rounded up to its allocation unit.
  size_t held() const { return held_; }

 private:
  std::unique_ptr<uint8_t, AlignedFree> data_;
  size_t size_ = 0;
  size_t held_ = 0;
};

}  // namespace crawler::dedup

#endif  // DEDUP_ALIGNED_BUFFER_H_
