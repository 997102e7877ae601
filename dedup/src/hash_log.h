// A stripe's hash log: the durable record of every key hash the stripe
// admitted as new, and of every erase, in order. Compaction rebuilds the
// stripe's chain as one layer from it (striped_filter.h), so it is the exact
// record of what the stripe holds.
//
// File LOG_DIR/stripe-NNNNN.hlog, little-endian:
//   header (32 bytes): "CRHLOG01" | version u32 (1) | stripe u32 |
//                      stripes u32 | type u32 | 0 u64
//   block*:            "HLB1" | count u32 | xxh64 u64 of the payload |
//                      count x entry
//   entry (16 bytes):  hash.lo u64 | hash.hi u64 with bits 63..48 replaced:
//                      bit 63 = 1 for an erase (tombstone), bits 62..48 = 0.
// Bits 63..48 of hash.hi only choose the stripe (hash.h), which the file
// names, so no layer loses a bit it uses.
//
// Entries are buffered and written as one block of up to kBlockEntries
// (64 KiB), never one write per key. The filter's saved stripe records how
// many entries its state covers (inserts_new + erases); Adopt cuts a longer
// log back to that many, as a resumed crawl cuts its WARC.
//
// Thread-compatibility: the owning stripe's lock guards Append and Flush;
// ReadRange may run concurrently with them on entries already flushed
// (pread of bytes below the end, appends past it).
#ifndef DEDUP_HASH_LOG_H_
#define DEDUP_HASH_LOG_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "dedup/hash.h"

namespace crawler::dedup::internal {

struct LogEntry {
  KeyHash hash;
  bool erase = false;
};

class HashLog {
 public:
  static constexpr uint32_t kBlockEntries = 4096;
  static constexpr uint64_t kHeaderBytes = 32;
  static constexpr uint64_t kBlockHeaderBytes = 16;

  // Creates LOG_DIR/stripe-NNNNN.hlog empty (replacing any old one).
  static Result<std::unique_ptr<HashLog>> Create(const std::string& dir, uint32_t stripe,
                                                 uint32_t stripes, uint32_t type);
  // Opens an existing log and cuts it back to its first `entries` entries.
  // With `bytes` (the length FlushLog saw when those entries were all
  // flushed) it cuts there and reads only the header and the first block's
  // frame; with 0 it reads every block header to find the cut (and the
  // block it cuts). Either way the checksums are checked when a compaction
  // reads the blocks. Errors, naming the file: missing, foreign header, a
  // broken block frame, shorter than `bytes`, or fewer than `entries`.
  static Result<std::unique_ptr<HashLog>> Adopt(const std::string& dir, uint32_t stripe,
                                                uint32_t stripes, uint32_t type,
                                                uint64_t entries, uint64_t bytes = 0);
  ~HashLog();
  HashLog(const HashLog&) = delete;
  HashLog& operator=(const HashLog&) = delete;

  static std::string PathFor(const std::string& dir, uint32_t stripe);

  // Buffers one entry; writes a block when the buffer is full. A failed
  // write marks the log broken (ok() false); the stripe then stops
  // compacting, and the caller's filter loses nothing.
  void Append(const KeyHash& h, bool erase) {
    if (!ok()) return;
    buffer_.push_back(Encode(h, erase));
    if (buffer_.size() >= kBlockEntries) Flush();
  }
  // Writes the buffered entries as one block (no fsync).
  void Flush();
  // fdatasync: every flushed entry is on disk. Safe in a forked child.
  Status Sync() const;

  bool ok() const { return ok_.load(std::memory_order_acquire); }
  // Why the log stopped (a failed write, or a compaction's Disable).
  const std::string& error() const { return error_; }
  uint64_t flushed_bytes() const { return bytes_; }
  uint64_t buffer_bytes() const { return buffer_.capacity() * sizeof(Raw); }
  const std::string& path() const { return path_; }

  // Stops appending (a compaction found the log unusable); the stripe
  // keeps working without it.
  void Disable(const std::string& why) {
    error_ = why;
    ok_.store(false, std::memory_order_release);
    buffer_.clear();
  }

  // Calls `apply(entries, n)` for each block in file bytes [from, to)
  // (block boundaries: offsets from flushed_bytes()), in order. Errors: a
  // read failure or a block whose magic or checksum is wrong.
  using BlockFn = std::function<void(const LogEntry*, size_t)>;
  Status ReadRange(uint64_t from, uint64_t to, const BlockFn& apply) const;

 private:
  struct Raw {
    uint64_t lo, hi;
  };
  static Raw Encode(const KeyHash& h, bool erase) {
    return Raw{h.lo, (h.hi & kHashBits) | (erase ? kEraseBit : 0)};
  }
  static constexpr uint64_t kHashBits = 0x0000FFFF'FFFFFFFFULL;
  static constexpr uint64_t kEraseBit = 1ULL << 63;

  HashLog(std::string path, int fd, uint64_t bytes)
      : path_(std::move(path)), fd_(fd), bytes_(bytes) {}
  void Fail(const std::string& what);

  const std::string path_;
  const int fd_;
  uint64_t bytes_;  // file length: header + whole blocks
  std::vector<Raw> buffer_;
  std::atomic<bool> ok_{true};
  std::string error_;
};

}  // namespace crawler::dedup::internal

#endif  // DEDUP_HASH_LOG_H_
