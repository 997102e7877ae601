// See frontier/image.h.
#include "frontier/image.h"

#include <unistd.h>

#include <cstring>
#include <memory>

#include "base/bytes.h"
#include "base/file_util.h"
#include "spill_record.h"

namespace crawler::frontier {
namespace {

constexpr char kMagic[8] = {'C', 'R', 'W', 'L', 'F', 'R', 'N', 'T'};
// 2: the engine's host state moved out to its own file (hosts.bin).
// 3: spilled URLs kept as files ('F'), a third count in 'E'.
constexpr uint32_t kVersion = 3;
constexpr uint32_t kOldestVersion = 2;
constexpr uint64_t kSpillRecordHead = 24;  // spill_record.h: six u32
constexpr size_t kFlushBytes = 1 << 16;

Status Damaged(const std::string& path, const std::string& what) {
  return Status::Error(Status::Code::kCorruption, path + ": " + what);
}

// A name for a file beside the image: no directory part, not . or ..
bool PlainName(const std::string& name) {
  return !name.empty() && name.size() <= 255 && name != "." && name != ".." &&
         name.find('/') == std::string::npos && name.find('\0') == std::string::npos;
}

// 'F': the range's fields (its path is the file's name).
void EncodeSpill(const SpillRange& r, const std::string& name, ByteWriter* w) {
  w->U8('F');
  w->Str(r.host);
  w->Str(name);
  w->U64(r.offset);
  w->U64(r.end);
  w->U64(r.count);
  w->U32(r.min_depth);
  w->U32(static_cast<uint32_t>(r.depths.size()));
  for (const auto& [depth, n] : r.depths) {
    w->U32(depth);
    w->U64(n);
  }
}

// Reads an 'F' record after its tag; "" or what is wrong with it.
std::string DecodeSpill(ByteReader* r, SpillRange* out) {
  out->host = r->Str();
  out->path = r->Str();
  out->offset = r->U64();
  out->end = r->U64();
  out->count = r->U64();
  out->min_depth = r->U32();
  uint32_t n = r->U32();
  if (!r->ok()) return "";
  if (out->host.empty() || HostKey(out->host) != out->host)
    return "not a host key: " + out->host;
  if (!PlainName(out->path)) return "not a spill file name: " + out->path;
  if (out->offset > out->end || out->count == 0 ||
      out->count > (out->end - out->offset) / kSpillRecordHead) {
    return "spill file " + out->path + ": range [" + std::to_string(out->offset) + ", " +
           std::to_string(out->end) + ") cannot hold " + std::to_string(out->count) +
           " URLs";
  }
  if (n > out->count || n > r->remaining() / 12)
    return "spill file " + out->path + ": bad depth counts";
  uint64_t sum = 0;
  for (uint32_t i = 0; i < n && r->ok(); ++i) {
    uint32_t depth = r->U32();
    uint64_t count = r->U64();
    if (count == 0 || (i > 0 && depth <= out->depths.back().first) ||
        count > out->count - sum) {
      return "spill file " + out->path + ": bad depth counts";
    }
    sum += count;
    out->depths.emplace_back(depth, count);
  }
  if (r->ok() && (sum != out->count || out->min_depth > out->depths.front().first))
    return "spill file " + out->path + ": bad depth counts";
  return "";
}

}  // namespace

uint64_t FrontierImage::Urls() const {
  uint64_t n = urls.size();
  for (const Spilled& s : spills) n += s.range.count;
  return n;
}

Status FrontierImage::ReadSpills() {
  std::vector<std::pair<UrlEntry, bool>> all;
  all.reserve(Urls());
  size_t next = 0;
  auto spills_before = [&](size_t i) -> Status {
    for (; next < spills.size() && spills[next].at <= i; ++next) {
      const SpillRange& r = spills[next].range;
      const std::string path = dir + "/" + r.path;
      Status st = ForEachSpillRecord(path, r.offset, r.count, [&](UrlEntry e) {
        if (HostKey(e.url) != r.host)
          return Damaged(path, "holds a URL not of " + r.host);
        all.emplace_back(std::move(e), false);
        return Status::Ok();
      });
      if (!st.ok()) return st;
    }
    return Status::Ok();
  };
  for (size_t i = 0; i < urls.size(); ++i) {
    Status st = spills_before(i);
    if (!st.ok()) return st;
    all.push_back(std::move(urls[i]));
  }
  Status st = spills_before(urls.size());
  if (!st.ok()) return st;
  urls = std::move(all);
  spills.clear();
  return Status::Ok();
}

std::unordered_map<std::string, uint64_t> FrontierImage::LeasedPerHost() const {
  std::unordered_map<std::string, uint64_t> out;
  for (const auto& [e, leased] : urls) {
    if (leased) ++out[std::string(HostKey(e.url))];
  }
  return out;
}

Status WriteFrontierImage(const Frontier& frontier, Clock::time_point cut, std::FILE* out,
                          const std::string& path, const std::string& link_dir,
                          std::vector<SpillRange>* linked) {
  ByteWriter w;
  w.Bytes(reinterpret_cast<const uint8_t*>(kMagic), sizeof(kMagic));
  w.U32(kVersion);
  w.U32(0);
  uint64_t hosts = 0, urls = 0, spills = 0;
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
        // attempt count, always); 'V' a revisit, of the kind that follows.
        bool sitemap = e.kind == UrlEntry::Kind::kSitemap;
        w.U8(e.revisit ? 'V' : sitemap ? 'S' : e.attempt > 0 ? 'R' : 'U');
        w.U8(leased ? 1 : 0);
        if (e.revisit) w.U8(static_cast<uint8_t>(e.kind));
        w.U32(e.depth);
        w.U32(e.redirects);
        w.Str(e.url);
        w.Str(e.referrer);
        if (sitemap || e.attempt > 0 || e.revisit) w.U32(e.attempt);
        ++urls;
        return flush(false);
      },
      [&](const SpillRange& range) -> Result<bool> {
        if (link_dir.empty()) return false;
        const std::string name = "spill-" + std::to_string(spills) + ".q";
        const std::string to = link_dir + "/" + name;
        // Not linkable (another file system, no hard links): URL by URL.
        if (::link(range.path.c_str(), to.c_str()) != 0) return false;
        EncodeSpill(range, name, &w);
        ++spills;
        if (linked != nullptr) {
          linked->push_back(range);
          linked->back().path = to;
        }
        Status flushed = flush(false);
        if (!flushed.ok()) return flushed;
        return true;
      });
  if (!st.ok()) return st;
  w.U8('E');
  w.U64(hosts);
  w.U64(urls);
  w.U64(spills);
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
  if (version < kOldestVersion || version > kVersion) {
    return Status::Error(Status::Code::kBadVersion,
                         path + ": frontier image version " + std::to_string(version) +
                             ", this build reads " + std::to_string(kOldestVersion) +
                             " to " + std::to_string(kVersion));
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
    } else if (tag == 'U' || tag == 'R' || tag == 'S' || tag == 'V') {
      UrlEntry e;
      bool leased = r.U8() != 0;
      e.revisit = tag == 'V';
      if (e.revisit && r.U8() == 1) e.kind = UrlEntry::Kind::kSitemap;
      e.depth = r.U32();
      e.redirects = r.U32();
      e.url = r.Str();
      e.referrer = r.Str();
      if (tag == 'R' || tag == 'S' || tag == 'V') e.attempt = r.U32();
      if (tag == 'S') e.kind = UrlEntry::Kind::kSitemap;
      if (r.ok() && HostKey(e.url).empty()) return Damaged(path, "not a URL: " + e.url);
      image.urls.emplace_back(std::move(e), leased);
    } else if (tag == 'F' && version >= 3) {
      FrontierImage::Spilled f;
      std::string bad = DecodeSpill(&r, &f.range);
      if (!bad.empty()) return Damaged(path, bad);
      f.at = image.urls.size();
      image.spills.push_back(std::move(f));
    } else if (tag == 'E') {
      uint64_t hosts = r.U64(), urls = r.U64();
      uint64_t spills = version >= 3 ? r.U64() : 0;
      if (r.ok() && (hosts != image.hosts.size() || urls != image.urls.size() ||
                     spills != image.spills.size())) {
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
  // A host's URLs after its file (its spill write buffer at the cut) are
  // queued last: queued in image order they would count against the RAM
  // bound before the next hosts' RAM parts, spill those, and the next hosts
  // could then not adopt their files (a host that spills takes a file's
  // URLs one by one). Each host keeps its own order.
  std::unordered_map<std::string_view, size_t> file_at;  // host -> its 'F' position
  for (const FrontierImage::Spilled& s : image.spills) file_at[s.range.host] = s.at;
  auto after_file = [&](size_t i) {
    auto it = file_at.find(HostKey(image.urls[i].first.url));
    return it != file_at.end() && i >= it->second;
  };
  size_t next = 0;
  for (size_t i = 0; i <= image.urls.size(); ++i) {
    for (; next < image.spills.size() && image.spills[next].at <= i; ++next) {
      SpillRange range = image.spills[next].range;
      range.path = image.dir + "/" + range.path;
      Status st = frontier->AdoptSpill(range);
      if (!st.ok()) return st;
    }
    if (i == image.urls.size() || after_file(i)) continue;
    Status st = frontier->Requeue(std::move(image.urls[i].first));
    if (!st.ok()) return st;
  }
  for (size_t i = 0; i < image.urls.size(); ++i) {
    if (!after_file(i)) continue;
    Status st = frontier->Requeue(std::move(image.urls[i].first));
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

}  // namespace crawler::frontier
