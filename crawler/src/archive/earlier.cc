// See archive/earlier.h.
#include "archive/earlier.h"

#include <zip.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string_view>
#include <vector>

#include "archive/index_line.h"
#include "output/cdxj.h"

namespace crawler::engine {
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

Status EarlierWacz(const std::string& path,
                   const std::function<Status(const EarlierCapture&)>& f) {
  int err = 0;
  std::unique_ptr<zip_t, int (*)(zip_t*)> z(zip_open(path.c_str(), ZIP_RDONLY, &err),
                                            &zip_close);
  if (!z) return Status::Invalid("dedup.from: " + path + ": not a ZIP file (WACZ)");
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat(z.get(), "indexes/index.cdx", 0, &st) != 0 ||
      (st.valid & ZIP_STAT_SIZE) == 0) {
    return Status::Invalid("dedup.from: " + path + ": a WACZ without indexes/index.cdx");
  }
  std::unique_ptr<zip_file_t, int (*)(zip_file_t*)> file(
      zip_fopen(z.get(), "indexes/index.cdx", 0), &zip_fclose);
  std::string text(st.size, '\0');
  if (!file ||
      zip_fread(file.get(), text.data(), st.size) != static_cast<zip_int64_t>(st.size)) {
    return Status::Error(Status::Code::kIoError,
                         "dedup.from: " + path + ": cannot read indexes/index.cdx");
  }
  std::vector<std::string> lines;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    lines.emplace_back(text, at, end - at);
    at = end + 1;
  }
  return EarlierLines(lines, path, f);
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
    const std::string index = cdxj::PathFor(warc);
    Status st;
    if (fs::exists(index, ec)) {
      st = EarlierCdxj(index, index, f);
    } else {
      auto lines = cdxj::IndexFile(warc);  // a torn tail is an error naming it
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

}  // namespace crawler::engine
