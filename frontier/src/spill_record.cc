// See spill_record.h.
#include "spill_record.h"

namespace crawler::frontier {

void EncodeSpillRecord(const UrlEntry& e, ByteWriter* w) {
  w->U32(e.depth);
  w->U32(e.redirects);
  w->U32(e.attempt);
  w->U32(static_cast<uint32_t>(e.kind));
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
  e->kind = r.U32() == 1 ? UrlEntry::Kind::kSitemap : UrlEntry::Kind::kPage;
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

}  // namespace crawler::frontier
