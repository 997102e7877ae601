// See seen_log.h.
#include "seen_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "base/bytes.h"
#include "base/file_util.h"

namespace crawler::engine {

Result<std::unique_ptr<SeenLog>> SeenLog::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(path, "open");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    Status s = IoError(path, "stat");
    ::close(fd);
    return s;
  }
  return std::unique_ptr<SeenLog>(
      new SeenLog(path, fd, static_cast<uint64_t>(st.st_size)));
}

SeenLog::~SeenLog() { ::close(fd_); }

Status SeenLog::Append(const std::vector<SeenRecord>& records) {
  if (records.empty()) return Status::Ok();
  ByteWriter w;
  w.Reserve(records.size() * kRecordBytes);
  for (const SeenRecord& r : records) {
    w.U32(r.shard);
    w.U32(0);
    w.U64(r.hash.lo);
    w.U64(r.hash.hi);
  }
  std::string_view data = w.view();
  MutexLock lock(mu_);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd_, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError(path_, "write");
    }
    done += static_cast<size_t>(n);
  }
  bytes_ += data.size();
  return Status::Ok();
}

uint64_t SeenLog::Bytes() const {
  MutexLock lock(mu_);
  return bytes_;
}

Result<std::vector<SeenRecord>> SeenLog::Read(const std::string& path, uint64_t bytes,
                                              const std::function<bool(uint32_t)>& want) {
  if (bytes % kRecordBytes != 0)
    return Status::Error(Status::Code::kCorruption,
                         path + ": the checkpoint records " + std::to_string(bytes) +
                             " bytes, not a whole number of " +
                             std::to_string(kRecordBytes) + "-byte records");
  std::vector<SeenRecord> out;
  if (bytes == 0) return out;
  std::FILE* f = std::fopen(path.c_str(), "rbe");
  if (f == nullptr) return IoError(path, "open");
  std::vector<uint8_t> buf(kRecordBytes * 4096);
  uint64_t left = bytes;
  while (left > 0) {
    size_t want_bytes = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
    size_t got = std::fread(buf.data(), 1, want_bytes, f);
    if (got != want_bytes) {
      std::fclose(f);
      return Status::Error(Status::Code::kCorruption,
                           path + ": shorter than the " + std::to_string(bytes) +
                               " bytes its checkpoint records");
    }
    ByteReader r(buf.data(), got);
    for (size_t i = 0; i < got / kRecordBytes; ++i) {
      SeenRecord rec;
      rec.shard = r.U32();
      (void)r.U32();
      rec.hash.lo = r.U64();
      rec.hash.hi = r.U64();
      if (want(rec.shard)) out.push_back(rec);
    }
    left -= got;
  }
  std::fclose(f);
  return out;
}

}  // namespace crawler::engine
