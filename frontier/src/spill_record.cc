// See spill_record.h.
#include "spill_record.h"

#include <memory>

#include "base/file_util.h"

namespace crawler::frontier {

void EncodeSpillRecord(const UrlEntry& e, ByteWriter* w) {
  w->U32(e.depth);
  w->U32(e.redirects);
  w->U32(e.attempt);
  w->U32(static_cast<uint32_t>(e.kind) | (e.revisit ? kRevisitBit : 0));
  w->U32(static_cast<uint32_t>(e.url.size()));
  w->U32(static_cast<uint32_t>(e.referrer.size()));
  w->Bytes(reinterpret_cast<const uint8_t*>(e.url.data()), e.url.size());
  w->Bytes(reinterpret_cast<const uint8_t*>(e.referrer.data()), e.referrer.size());
}

bool ReadSpillRecord(std::FILE* f, UrlEntry* e, uint64_t* bytes) {
  uint8_t head[24];
  if (std::fread(head, 1, sizeof(head), f) != sizeof(head)) return false;
  ByteReader r(head, sizeof(head));
  e->depth = r.U32();
  e->redirects = r.U32();
  e->attempt = r.U32();
  const uint32_t kind = r.U32();
  e->kind = (kind & ~kRevisitBit) == 1 ? UrlEntry::Kind::kSitemap : UrlEntry::Kind::kPage;
  e->revisit = (kind & kRevisitBit) != 0;
  uint32_t url_len = r.U32(), ref_len = r.U32();
  e->url.resize(url_len);
  e->referrer.resize(ref_len);
  if (std::fread(e->url.data(), 1, url_len, f) != url_len ||
      std::fread(e->referrer.data(), 1, ref_len, f) != ref_len) {
    return false;
  }
  *bytes = sizeof(head) + url_len + ref_len;
  return true;
}

Status ForEachSpillRecord(const std::string& path, uint64_t offset, uint64_t count,
                          const std::function<Status(UrlEntry)>& f) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return IoError(path, "open");
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(file, &std::fclose);
  if (std::fseek(file, static_cast<long>(offset), SEEK_SET) != 0)
    return IoError(path, "seek");
  for (uint64_t i = 0; i < count; ++i) {
    UrlEntry e;
    uint64_t bytes = 0;
    if (!ReadSpillRecord(file, &e, &bytes)) {
      return Status::Error(Status::Code::kCorruption,
                           path + ": spill file ends early (" + std::to_string(count) +
                               " records expected from offset " + std::to_string(offset) +
                               ")");
    }
    Status st = f(std::move(e));
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

}  // namespace crawler::frontier
