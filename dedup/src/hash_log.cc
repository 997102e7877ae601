// See hash_log.h.
#include "hash_log.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/bytes.h"
#include "base/file_util.h"

namespace crawler::dedup::internal {
namespace {

static_assert(std::endian::native == std::endian::little,
              "log entries are written as raw little-endian words");

constexpr char kLogMagic[8] = {'C', 'R', 'H', 'L', 'O', 'G', '0', '1'};
constexpr char kBlockMagic[4] = {'H', 'L', 'B', '1'};
constexpr uint32_t kLogVersion = 1;

std::string Header(uint32_t stripe, uint32_t stripes, uint32_t type) {
  ByteWriter w;
  w.Bytes(reinterpret_cast<const uint8_t*>(kLogMagic), sizeof(kLogMagic));
  w.U32(kLogVersion);
  w.U32(stripe);
  w.U32(stripes);
  w.U32(type);
  w.U64(0);
  return std::string(w.view());
}

bool PreadAll(int fd, void* buf, size_t n, uint64_t off) {
  auto* p = static_cast<uint8_t*>(buf);
  while (n > 0) {
    ssize_t got = ::pread(fd, p, n, static_cast<off_t>(off));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
    off += static_cast<uint64_t>(got);
  }
  return true;
}

bool WriteAll(int fd, const void* buf, size_t n) {
  const auto* p = static_cast<const uint8_t*>(buf);
  while (n > 0) {
    ssize_t put = ::write(fd, p, n);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    p += put;
    n -= static_cast<size_t>(put);
  }
  return true;
}

struct BlockHead {
  uint32_t count = 0;
  uint64_t checksum = 0;
};

// Reads the block header at `off`; false if cut short or not a block.
bool ReadBlockHead(int fd, uint64_t off, BlockHead* head) {
  uint8_t raw[HashLog::kBlockHeaderBytes];
  if (!PreadAll(fd, raw, sizeof(raw), off)) return false;
  if (std::memcmp(raw, kBlockMagic, 4) != 0) return false;
  ByteReader r(raw + 4, sizeof(raw) - 4);
  head->count = r.U32();
  head->checksum = r.U64();
  return head->count > 0 && head->count <= HashLog::kBlockEntries;
}

std::string BlockBytes(const void* entries, uint32_t count) {
  const size_t payload = size_t{count} * 16;
  ByteWriter w;
  w.Bytes(reinterpret_cast<const uint8_t*>(kBlockMagic), 4);
  w.U32(count);
  w.U64(XXH64(entries, payload, 0));
  std::string out(w.view());
  out.append(static_cast<const char*>(entries), payload);
  return out;
}

}  // namespace

std::string HashLog::PathFor(const std::string& dir, uint32_t stripe) {
  char name[32];
  std::snprintf(name, sizeof(name), "stripe-%05u.hlog", stripe);
  return dir + "/" + name;
}

Result<std::unique_ptr<HashLog>> HashLog::Create(const std::string& dir, uint32_t stripe,
                                                 uint32_t stripes, uint32_t type) {
  const std::string path = PathFor(dir, stripe);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(path, "create");
  const std::string head = Header(stripe, stripes, type);
  if (!WriteAll(fd, head.data(), head.size())) {
    Status st = IoError(path, "write header");
    ::close(fd);
    return st;
  }
  return std::unique_ptr<HashLog>(new HashLog(path, fd, kHeaderBytes));
}

Result<std::unique_ptr<HashLog>> HashLog::Adopt(const std::string& dir, uint32_t stripe,
                                                uint32_t stripes, uint32_t type,
                                                uint64_t entries, uint64_t bytes) {
  const std::string path = PathFor(dir, stripe);
  int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC);
  if (fd < 0) return IoError(path, "open");
  auto fail = [&](const std::string& what) {
    ::close(fd);
    return Status::Error(Status::Code::kCorruption, path + ": " + what);
  };
  auto io_fail = [&](const char* what) {
    Status st = IoError(path, what);
    ::close(fd);
    return st;
  };
  const std::string want = Header(stripe, stripes, type);
  std::string head(kHeaderBytes, '\0');
  if (!PreadAll(fd, head.data(), head.size(), 0)) return fail("header is cut short");
  if (head != want) return fail("not the log of this filter's stripe (header differs)");
  const uint64_t file_bytes = static_cast<uint64_t>(::lseek(fd, 0, SEEK_END));
  if (bytes > 0) {
    // The recorded length: entries plus one 16-byte frame per block.
    const uint64_t min_blocks = (entries + kBlockEntries - 1) / kBlockEntries;
    if (bytes < kHeaderBytes + entries * 16 + min_blocks * kBlockHeaderBytes ||
        (bytes - kHeaderBytes) % 16 != 0) {
      return fail("the recorded length " + std::to_string(bytes) + " cannot hold " +
                  std::to_string(entries) + " entries");
    }
    if (file_bytes < bytes) {
      return fail("is " + std::to_string(file_bytes) +
                  " bytes, the checkpoint recorded " + std::to_string(bytes));
    }
    BlockHead bh;
    if (entries > 0 && !ReadBlockHead(fd, kHeaderBytes, &bh))
      return fail("no whole block at byte " + std::to_string(kHeaderBytes));
    if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) return io_fail("truncate");
    return std::unique_ptr<HashLog>(new HashLog(path, fd, bytes));
  }
  // Block headers only: a resume must not read the whole log (16 bytes a
  // key: 1.6 GB at 10^8). Every block's checksum is checked when a
  // compaction reads it (ReadRange), which refuses a damaged log then.
  uint64_t off = kHeaderBytes, have = 0;
  std::vector<Raw> block;
  while (have < entries) {
    BlockHead bh;
    if (!ReadBlockHead(fd, off, &bh) ||
        off + kBlockHeaderBytes + uint64_t{bh.count} * 16 > file_bytes) {
      return fail("holds " + std::to_string(have) + " of the " + std::to_string(entries) +
                  " entries the checkpoint needs (no whole block at byte " +
                  std::to_string(off) + ")");
    }
    if (have + bh.count > entries) {
      block.resize(bh.count);
      if (!PreadAll(fd, block.data(), bh.count * 16, off + kBlockHeaderBytes) ||
          XXH64(block.data(), bh.count * 16, 0) != bh.checksum) {
        return fail("block at byte " + std::to_string(off) +
                    " is damaged (checksum) or cut short");
      }
      // The block runs past the checkpoint: keep its first entries.
      const auto keep = static_cast<uint32_t>(entries - have);
      const std::string cut = BlockBytes(block.data(), keep);
      if (::ftruncate(fd, static_cast<off_t>(off)) != 0) return io_fail("truncate");
      if (!WriteAll(fd, cut.data(), cut.size())) return io_fail("rewrite the last block");
      off += cut.size();
      have = entries;
      break;
    }
    have += bh.count;
    off += kBlockHeaderBytes + uint64_t{bh.count} * 16;
  }
  if (::ftruncate(fd, static_cast<off_t>(off)) != 0) return io_fail("truncate");
  return std::unique_ptr<HashLog>(new HashLog(path, fd, off));
}

HashLog::~HashLog() {
  Flush();
  ::close(fd_);
}

void HashLog::Fail(const std::string& what) { Disable(IoError(path_, what).message()); }

void HashLog::Flush() {
  if (!ok() || buffer_.empty()) return;
  const std::string block =
      BlockBytes(buffer_.data(), static_cast<uint32_t>(buffer_.size()));
  if (!WriteAll(fd_, block.data(), block.size())) return Fail("write");
  bytes_ += block.size();
  buffer_.clear();
}

Status HashLog::Sync() const {
  if (!ok()) return Status::Ok();  // disabled: no longer needed
  return ::fdatasync(fd_) == 0 ? Status::Ok() : IoError(path_, "fdatasync");
}

Status HashLog::ReadRange(uint64_t from, uint64_t to, const BlockFn& apply) const {
  std::vector<Raw> block;
  std::vector<LogEntry> entries;
  for (uint64_t off = from; off < to;) {
    BlockHead bh;
    if (!ReadBlockHead(fd_, off, &bh) ||
        off + kBlockHeaderBytes + uint64_t{bh.count} * 16 > to)
      return Status::Error(Status::Code::kCorruption,
                           path_ + ": no whole block at byte " + std::to_string(off));
    block.resize(bh.count);
    if (!PreadAll(fd_, block.data(), bh.count * 16, off + kBlockHeaderBytes) ||
        XXH64(block.data(), bh.count * 16, 0) != bh.checksum) {
      return Status::Error(Status::Code::kCorruption,
                           path_ + ": block at byte " + std::to_string(off) +
                               " is damaged (checksum) or cut short");
    }
    entries.clear();
    for (const Raw& raw : block) {
      entries.push_back(
          LogEntry{KeyHash{raw.lo, raw.hi & kHashBits}, (raw.hi & kEraseBit) != 0});
    }
    apply(entries.data(), entries.size());
    off += kBlockHeaderBytes + uint64_t{bh.count} * 16;
  }
  return Status::Ok();
}

}  // namespace crawler::dedup::internal
