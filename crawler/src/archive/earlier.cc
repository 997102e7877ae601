// See archive/earlier.h.
#include "archive/earlier.h"

#include <zip.h>
#include <zlib.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string_view>
#include <vector>

#include "archive/index_line.h"
#include "output/cdxj.h"

namespace crawler::archive {
namespace {

// "20261202204541" -> Unix ms (UTC); 0 for a timestamp that is not one.
uint64_t EarlierTimestampMs(std::string_view ts) {
  if (ts.size() < 14) return 0;
  for (char c : ts.substr(0, 14))
    if (c < '0' || c > '9') return 0;
  auto num = [&](size_t at, size_t n) {
    return std::stoi(std::string(ts.substr(at, n)));
  };
  std::tm t{};
  t.tm_year = num(0, 4) - 1900;
  t.tm_mon = num(4, 2) - 1;
  t.tm_mday = num(6, 2);
  t.tm_hour = num(8, 2);
  t.tm_min = num(10, 2);
  t.tm_sec = num(12, 2);
  const time_t s = ::timegm(&t);
  return s < 0 ? 0 : static_cast<uint64_t>(s) * 1000;
}

// Gzip members one after another (RFC 1952 2.2), inflated as they come:
// zlib's inflate ends at each member's end, and starts again on the next.
class GzipMembers {
 public:
  GzipMembers() { ok_ = inflateInit2(&z_, 15 + 16) == Z_OK; }  // 16: gzip only
  ~GzipMembers() { inflateEnd(&z_); }
  GzipMembers(const GzipMembers&) = delete;
  GzipMembers& operator=(const GzipMembers&) = delete;
  Status Feed(std::string_view in, const std::function<Status(std::string_view)>& out) {
    if (!ok_) return Status::Error(Status::Code::kIoError, "zlib: inflateInit2 failed");
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z_.avail_in = static_cast<uInt>(in.size());
    char buf[64 * 1024];
    while (z_.avail_in > 0) {
      z_.next_out = reinterpret_cast<Bytef*>(buf);
      z_.avail_out = sizeof buf;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
        return Status::Error(
            Status::Code::kCorruption,
            std::string("not gzip data (") + (z_.msg ? z_.msg : "?") + ")");
      Status st = out(std::string_view(buf, sizeof buf - z_.avail_out));
      if (!st.ok()) return st;
      in_member_ = rc != Z_STREAM_END;
      if (rc == Z_STREAM_END) inflateReset(&z_);
      if (rc == Z_BUF_ERROR && z_.avail_out != 0) break;  // needs more input
    }
    return Status::Ok();
  }
  bool Complete() const { return !in_member_; }

 private:
  z_stream z_{};
  bool ok_ = false;
  bool in_member_ = false;  // bytes of a member read, its end not yet
};

// One index line of `source` (line `n`, 1-based) to f, if a full 200 capture.
Status EarlierLine(std::string_view line, const std::string& source, uint64_t n,
                   const std::function<Status(const EarlierCapture&)>& f) {
  if (line.empty() || line[0] == '!') return Status::Ok();  // a CDX header
  const IndexLine l = ParseIndexLine(line);
  const uint64_t ms = EarlierTimestampMs(l.ts);
  if (!l.ok || ms == 0) {
    return Status::Error(Status::Code::kCorruption, "dedup.from: " + source + ": line " +
                                                        std::to_string(n) +
                                                        " is not a CDXJ index line");
  }
  if (l.status != "200" || l.mime == "warc/revisit" || l.digest.empty())
    return Status::Ok();
  // warcio and our writer leave "sha1:" out; pywb's indexes may have it.
  const std::string digest =
      l.digest.find(':') == std::string::npos ? "sha1:" + l.digest : l.digest;
  return f({.digest = digest, .uri = l.url, .date_ms = ms});
}

Status EarlierLines(const std::vector<std::string>& lines, const std::string& source,
                    const std::function<Status(const EarlierCapture&)>& f) {
  uint64_t n = 0;
  for (const std::string& line : lines) {
    Status st = EarlierLine(line, source, ++n, f);
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

Status EarlierCdxj(const std::string& path, const std::string& source,
                   const std::function<Status(const EarlierCapture&)>& f) {
  std::ifstream in(path);
  if (!in)
    return Status::Error(Status::Code::kIoError, "dedup.from: cannot read " + path);
  uint64_t n = 0;
  for (std::string line; std::getline(in, line);) {
    Status st = EarlierLine(line, source, ++n, f);
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

// Splits a stream of bytes into lines for EarlierLine: what a WACZ's index
// yields chunk by chunk (a line may span chunks).
class LineSplitter {
 public:
  LineSplitter(const std::string& source,
               const std::function<Status(const EarlierCapture&)>& f)
      : source_(source), f_(f) {}
  Status Feed(std::string_view bytes) {
    for (size_t at = 0; at < bytes.size();) {
      const size_t end = bytes.find('\n', at);
      if (end == std::string_view::npos) {
        partial_.append(bytes.substr(at));
        break;
      }
      partial_.append(bytes.substr(at, end - at));
      Status st = EarlierLine(partial_, source_, ++n_, f_);
      partial_.clear();
      if (!st.ok()) return st;
      at = end + 1;
    }
    return Status::Ok();
  }
  Status End() { return partial_.empty() ? Status::Ok() : Feed("\n"); }

 private:
  const std::string& source_;
  const std::function<Status(const EarlierCapture&)>& f_;
  std::string partial_;
  uint64_t n_ = 0;
};

// A WACZ's index, read in 64 KiB chunks (never whole: an index of a large
// crawl is gigabytes): indexes/index.cdx, or indexes/index.cdx.gz (a ZipNum
// index as other tools write it: gzip members one after another, each
// inflated in turn by zlib).
Status EarlierWacz(const std::string& path,
                   const std::function<Status(const EarlierCapture&)>& f) {
  int err = 0;
  std::unique_ptr<zip_t, int (*)(zip_t*)> z(zip_open(path.c_str(), ZIP_RDONLY, &err),
                                            &zip_close);
  if (!z) return Status::Invalid("dedup.from: " + path + ": not a ZIP file (WACZ)");
  bool gzipped = false;
  zip_int64_t index = zip_name_locate(z.get(), "indexes/index.cdx", 0);
  if (index < 0) {
    index = zip_name_locate(z.get(), "indexes/index.cdx.gz", 0);
    gzipped = index >= 0;
  }
  if (index < 0) {
    return Status::Invalid("dedup.from: " + path +
                           ": a WACZ without indexes/index.cdx or index.cdx.gz");
  }
  const std::string name = std::string("indexes/index.cdx") + (gzipped ? ".gz" : "");
  const std::string source = path + ": " + name;
  std::unique_ptr<zip_file_t, int (*)(zip_file_t*)> file(
      zip_fopen_index(z.get(), static_cast<zip_uint64_t>(index), 0), &zip_fclose);
  const Status unreadable = Status::Error(
      Status::Code::kIoError, "dedup.from: " + path + ": cannot read " + name);
  if (!file) return unreadable;
  LineSplitter lines(source, f);
  GzipMembers inflate;
  std::vector<char> chunk(64 * 1024);
  for (;;) {
    const zip_int64_t got = zip_fread(file.get(), chunk.data(), chunk.size());
    if (got < 0) return unreadable;
    if (got == 0) break;
    const std::string_view bytes(chunk.data(), static_cast<size_t>(got));
    Status st =
        gzipped
            ? inflate.Feed(bytes, [&](std::string_view out) { return lines.Feed(out); })
            : lines.Feed(bytes);
    if (!st.ok()) return st;
  }
  if (gzipped && !inflate.Complete())
    return Status::Error(Status::Code::kCorruption,
                         "dedup.from: " + source + ": the gzip data ends mid-member");
  return lines.End();
}

// A crawl's output directory: each WARC file's index, or the file indexed.
Status EarlierCrawl(const std::string& dir,
                    const std::function<Status(const EarlierCapture&)>& f) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> warcs;
  for (const fs::directory_entry& e : fs::directory_iterator(dir + "/warc", ec))
    if (e.path().string().ends_with(".warc.gz")) warcs.push_back(e.path().string());
  if (ec || warcs.empty())
    return Status::Invalid("dedup.from: " + dir + ": a directory without warc/*.warc.gz");
  for (const std::string& warc : warcs) {
    const std::string index = output::cdxj::PathFor(warc);
    Status st;
    if (fs::exists(index, ec)) {
      st = EarlierCdxj(index, index, f);
    } else {
      auto lines = output::cdxj::IndexFile(warc);  // a torn tail is an error naming it
      st = lines.ok() ? EarlierLines(*lines, warc, f) : lines.status();
    }
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

}  // namespace

Status ReadEarlierCaptures(const std::string& source,
                           const std::function<Status(const EarlierCapture&)>& f) {
  std::error_code ec;
  if (std::filesystem::is_directory(source, ec)) return EarlierCrawl(source, f);
  if (source.ends_with(".wacz")) return EarlierWacz(source, f);
  if (source.ends_with(".cdxj") || source.ends_with(".cdx"))
    return EarlierCdxj(source, source, f);
  return Status::Invalid("dedup.from: " + source +
                         ": not a crawl's output directory, a .wacz or a .cdxj file");
}

}  // namespace crawler::archive
