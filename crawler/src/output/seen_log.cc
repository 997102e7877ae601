// See seen_log.h.
#include "output/seen_log.h"

#include <cstdio>

#include "base/bytes.h"
#include "base/file_util.h"

namespace crawler::output {

Result<std::unique_ptr<SeenLog>> SeenLog::Open(const std::string& path) {
  auto file = AppendLog::Open(path);
  if (!file.ok()) return file.status();
  return std::unique_ptr<SeenLog>(new SeenLog(std::move(file).value()));
}

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
  return file_->Append(w.view());
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

}  // namespace crawler::output
