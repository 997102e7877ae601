// See frontier/image.h.
#include "frontier/image.h"

#include <cstring>

#include "base/bytes.h"
#include "base/file_util.h"

namespace crawler::frontier {
namespace {

constexpr char kMagic[8] = {'C', 'R', 'W', 'L', 'F', 'R', 'N', 'T'};
// 2: the engine's host state moved out to its own file (hosts.bin).
constexpr uint32_t kVersion = 2;
constexpr size_t kFlushBytes = 1 << 16;

Status Damaged(const std::string& path, const std::string& what) {
  return Status::Error(Status::Code::kCorruption, path + ": " + what);
}

}  // namespace

std::unordered_map<std::string, uint64_t> FrontierImage::LeasedPerHost() const {
  std::unordered_map<std::string, uint64_t> out;
  for (const auto& [e, leased] : urls) {
    if (leased) ++out[std::string(HostKey(e.url))];
  }
  return out;
}

Status WriteFrontierImage(const Frontier& frontier, Clock::time_point cut, std::FILE* out,
                          const std::string& path) {
  ByteWriter w;
  w.Bytes(reinterpret_cast<const uint8_t*>(kMagic), sizeof(kMagic));
  w.U32(kVersion);
  w.U32(0);
  uint64_t hosts = 0, urls = 0;
  auto flush = [&](bool always) -> Status {
    if (!always && w.view().size() < kFlushBytes) return Status::Ok();
    std::string_view bytes = w.view();
    bool ok = std::fwrite(bytes.data(), 1, bytes.size(), out) == bytes.size();
    w.Clear();
    return ok ? Status::Ok() : IoError(path, "write");
  };
  Status st = frontier.ForEachEntry(
      cut,
      [&](const HostImage& h) {
        w.U8('H');
        w.Str(h.key);
        w.U8(h.open ? 1 : 0);
        w.F64(h.crawl_delay_s);
        w.F64(h.due_in_s);
        ++hosts;
        return flush(false);
      },
      [&](const UrlEntry& e, bool leased) {
        // 'U' a page, 'R' a page fetched again, 'S' a sitemap (with its
        // attempt count, always).
        bool sitemap = e.kind == UrlEntry::Kind::kSitemap;
        w.U8(sitemap ? 'S' : e.attempt > 0 ? 'R' : 'U');
        w.U8(leased ? 1 : 0);
        w.U32(e.depth);
        w.U32(e.redirects);
        w.Str(e.url);
        w.Str(e.referrer);
        if (sitemap || e.attempt > 0) w.U32(e.attempt);
        ++urls;
        return flush(false);
      });
  if (!st.ok()) return st;
  w.U8('E');
  w.U64(hosts);
  w.U64(urls);
  return flush(true);
}

Result<FrontierImage> DecodeFrontierImage(std::string_view bytes,
                                          const std::string& path) {
  if (bytes.size() < 16 || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return Status::Error(Status::Code::kBadMagic, path + ": not a frontier image");
  }
  ByteReader r(bytes.substr(8));
  uint32_t version = r.U32();
  r.U32();
  if (version != kVersion) {
    return Status::Error(Status::Code::kBadVersion,
                         path + ": frontier image version " + std::to_string(version) +
                             ", this build reads " + std::to_string(kVersion));
  }
  FrontierImage image;
  bool ended = false;
  while (r.ok() && !r.AtEnd() && !ended) {
    uint8_t tag = r.U8();
    if (tag == 'H') {
      HostImage h;
      h.key = r.Str();
      h.open = r.U8() != 0;
      h.crawl_delay_s = r.F64();
      h.due_in_s = r.F64();
      if (r.ok() && (h.key.empty() || HostKey(h.key) != h.key))
        return Damaged(path, "not a host key: " + h.key);
      image.hosts.push_back(std::move(h));
    } else if (tag == 'U' || tag == 'R' || tag == 'S') {
      UrlEntry e;
      bool leased = r.U8() != 0;
      e.depth = r.U32();
      e.redirects = r.U32();
      e.url = r.Str();
      e.referrer = r.Str();
      if (tag == 'R' || tag == 'S') e.attempt = r.U32();
      if (tag == 'S') e.kind = UrlEntry::Kind::kSitemap;
      if (r.ok() && HostKey(e.url).empty()) return Damaged(path, "not a URL: " + e.url);
      image.urls.emplace_back(std::move(e), leased);
    } else if (tag == 'E') {
      uint64_t hosts = r.U64(), urls = r.U64();
      if (r.ok() && (hosts != image.hosts.size() || urls != image.urls.size())) {
        return Damaged(path, "record counts do not match its end record");
      }
      ended = true;
    } else {
      return Damaged(path, "unknown record tag " + std::to_string(tag) + " at offset " +
                               std::to_string(bytes.size() - r.remaining() - 1));
    }
  }
  if (!r.ok() || !ended || !r.AtEnd())
    return Damaged(path, "truncated or trailing bytes");
  return image;
}

Status RestoreFrontier(FrontierImage image, Clock::time_point now, Frontier* frontier) {
  for (const HostImage& h : image.hosts) frontier->RestoreHost(h, now);
  for (auto& [e, leased] : image.urls) {
    Status st = frontier->Requeue(std::move(e));
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

}  // namespace crawler::frontier
