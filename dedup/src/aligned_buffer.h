// A zero-filled, cache-line-aligned byte buffer that owns its memory.
// Used for every layer's table, so one probed block never straddles two lines.
// Not thread-safe by itself; layers guard it with their stripe's lock.
#ifndef DEDUP_ALIGNED_BUFFER_H_
#define DEDUP_ALIGNED_BUFFER_H_

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace crawler::dedup {

class AlignedBuffer {
 public:
  static constexpr size_t kAlign = 128;  // a pair of lines: what the L2 spatial prefetcher fetches together

  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t size) : size_(size) {
    if (size == 0) return;
    size_t rounded = (size + kAlign - 1) / kAlign * kAlign;
    void* p = std::aligned_alloc(kAlign, rounded);
    if (p == nullptr) throw std::bad_alloc();
    std::memset(p, 0, rounded);
    data_.reset(static_cast<uint8_t*>(p));
  }
  AlignedBuffer(AlignedBuffer&&) noexcept = default;
  AlignedBuffer& operator=(AlignedBuffer&&) noexcept = default;

  uint8_t* data() { return data_.get(); }
  const uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> data_;
  size_t size_ = 0;
};

}  // namespace crawler::dedup

#endif  // DEDUP_ALIGNED_BUFFER_H_
