// The one little-endian byte codec of this repository: every binary format
// (dedup.bin, frontier.bin, the frontier's spill files) is written with
// ByteWriter and read with ByteReader.
//
// Integers are little-endian; doubles are their IEEE-754 binary64 bit
// pattern; a string is u32 length + bytes. Plain values, thread-compatible.
#ifndef BASE_BYTES_H_
#define BASE_BYTES_H_

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace crawler {

// Appends little-endian values to a growable buffer. With `by_reference`,
// Bytes() of a large block records a pointer to it instead of copying it (the
// caller keeps the block alive and unchanged until the writer is written
// out): a frozen filter is then written straight from its own memory.
class ByteWriter {
 public:
  explicit ByteWriter(bool by_reference = false) : by_reference_(by_reference) {}
  void U8(uint8_t v) { Raw(&v, 1); }
  void U32(uint32_t v) { Le(v); }
  void U64(uint64_t v) { Le(v); }
  void F64(double v) { U64(std::bit_cast<uint64_t>(v)); }
  // u32 length, then the bytes. REQUIRES: s.size() < 4 GiB.
  void Str(std::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    Raw(s.data(), s.size());
  }
  void Bytes(const uint8_t* p, size_t n) {
    if (by_reference_ && n >= 4096) {
      pieces_.push_back({buf_.size(), p, n});
      size_ += n;
    } else {
      Raw(p, n);
    }
  }
  void Reserve(size_t n) { buf_.reserve(by_reference_ ? 4096 : n); }
  // The bytes written so far. REQUIRES: not by_reference.
  std::string_view view() const { return buf_; }
  // Drops the buffered bytes (REQUIRES: not by_reference).
  void Clear() {
    buf_.clear();
    size_ = 0;
  }
  uint64_t size() const { return size_; }
  // Calls f(data, n) for each consecutive run of bytes, in order.
  template <typename F>
  void ForEachRun(F&& f) const {
    size_t at = 0;
    for (const Piece& piece : pieces_) {
      if (piece.offset > at) f(Data() + at, piece.offset - at);
      f(piece.data, piece.size);
      at = piece.offset;
    }
    if (buf_.size() > at) f(Data() + at, buf_.size() - at);
  }

 private:
  struct Piece {
    size_t offset;  // in buf_: the piece comes before buf_[offset]
    const uint8_t* data;
    size_t size;
  };
  template <typename T>
  void Le(T v) {  // byte by byte: little-endian on any host (one store on x86)
    uint8_t b[sizeof(T)];
    for (size_t i = 0; i < sizeof(T); ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
    Raw(b, sizeof(T));
  }
  void Raw(const void* p, size_t n) {
    // std::string, not std::vector<uint8_t>: GCC 12 reports bogus
    // -Wstringop-overflow / -Warray-bounds for a vector's insert and resize.
    buf_.append(static_cast<const char*>(p), n);
    size_ += n;
  }
  const uint8_t* Data() const { return reinterpret_cast<const uint8_t*>(buf_.data()); }
  bool by_reference_;
  std::string buf_;
  std::vector<Piece> pieces_;
  uint64_t size_ = 0;
};

// Reads little-endian values from a byte span; a read past the end sets a
// sticky failure and returns zeros, checked once with ok().
class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  explicit ByteReader(std::string_view s)
      : ByteReader(reinterpret_cast<const uint8_t*>(s.data()), s.size()) {}
  uint8_t U8() {
    uint8_t v = 0;
    Raw(&v, 1);
    return v;
  }
  uint32_t U32() { return Le<uint32_t>(); }
  uint64_t U64() { return Le<uint64_t>(); }
  double F64() { return std::bit_cast<double>(U64()); }
  // Returns a pointer to the next n bytes, or nullptr (and failure) if short.
  const uint8_t* Bytes(uint64_t n) {
    if (!ok_ || n > static_cast<uint64_t>(end_ - p_)) {
      ok_ = false;
      return nullptr;
    }
    const uint8_t* at = p_;
    p_ += n;
    return at;
  }
  // A string written by ByteWriter::Str (u32 length, then the bytes).
  std::string Str() {
    uint32_t n = U32();
    const uint8_t* at = Bytes(n);
    return at == nullptr ? std::string()
                         : std::string(reinterpret_cast<const char*>(at), n);
  }
  bool ok() const { return ok_; }
  bool AtEnd() const { return p_ == end_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }

 private:
  template <typename T>
  T Le() {
    const uint8_t* at = Bytes(sizeof(T));
    T v = 0;
    if (at == nullptr) return v;
    for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(at[i]) << (8 * i);
    return v;
  }
  void Raw(void* out, size_t n) {
    const uint8_t* at = Bytes(n);
    if (at != nullptr) std::memcpy(out, at, n);
  }
  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

}  // namespace crawler

#endif  // BASE_BYTES_H_
