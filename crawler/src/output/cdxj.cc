// CDXJ lines, SURT keys and the WARC reader that indexes a file; see cdxj.h.
#include "output/cdxj.h"

#include <zlib.h>

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <boost/url/parse.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "base/ascii.h"
#include "base/file_util.h"
#include "output/http_head.h"

namespace crawler::output::cdxj {
namespace {

using ascii::EqualsIgnoreCase;
using ascii::LowerAscii;
using ascii::Trim;

std::string Quoted(std::string_view s) {
  return boost::json::serialize(boost::json::string_view(s.data(), s.size()));
}

// The line for the record whose first bytes (WARC head, then the start of
// its block) are `record`, or "" for a record the index leaves out.
std::string IndexRecord(std::string_view record, uint64_t offset, uint64_t length,
                        std::string_view filename) {
  std::string type, content_type, date;
  Fields f;
  ForEachHeader(record, true, [&](std::string_view name, std::string_view value) {
    if (EqualsIgnoreCase(name, "WARC-Type")) type = value;
    if (EqualsIgnoreCase(name, "WARC-Target-URI")) f.url = value;
    if (EqualsIgnoreCase(name, "WARC-Date")) date = value;
    if (EqualsIgnoreCase(name, "Content-Type")) content_type = value;
    if (EqualsIgnoreCase(name, "WARC-Payload-Digest")) {
      size_t colon = value.find(':');
      if (colon != std::string_view::npos) f.digest = value.substr(colon + 1);
    }
  });
  if (type.empty() || type == "request" || type == "warcinfo") return {};
  if ((type == "metadata" || type == "resource") &&
      content_type == "application/warc-fields")
    return {};
  f.timestamp = Timestamp(date);
  if (type == "response" || type == "revisit") {
    size_t block = record.find("\r\n\r\n");
    std::string_view http =
        block == std::string_view::npos ? std::string_view() : record.substr(block + 4);
    std::string mime;
    if (http.starts_with("HTTP/")) HttpFields(http, &f.status, &mime);
    f.mime = type == "revisit" ? "warc/revisit" : mime;
  } else {
    f.mime = content_type;
  }
  return Line(f, offset, length, filename);
}

}  // namespace

std::string Surt(std::string_view url) {
  if (!url.starts_with("http:") && !url.starts_with("https:")) return std::string(url);
  std::string u(url);
  // ^(https?://)www\d*\.  ->  $1
  size_t host = u.find("://");
  if (host != std::string::npos && u.compare(host + 3, 3, "www") == 0) {
    size_t p = host + 6;
    while (p < u.size() && ascii::IsDigit(u[p])) ++p;
    if (p < u.size() && u[p] == '.') u.erase(host + 3, p + 1 - (host + 3));
  }
  u = LowerAscii(u);
  auto parsed = boost::urls::parse_uri(u);
  if (!parsed) return std::string(url);
  std::string hostname(parsed->encoded_host());
  std::vector<std::string_view> labels;
  std::string_view rest(hostname);
  for (size_t dot; (dot = rest.find('.')) != std::string_view::npos;) {
    labels.push_back(rest.substr(0, dot));
    rest.remove_prefix(dot + 1);
  }
  labels.push_back(rest);
  std::string key;
  for (size_t i = labels.size(); i-- > 0;) {
    key += labels[i];
    if (i > 0) key += ',';
  }
  std::string_view port = parsed->port();
  const bool default_port = (parsed->scheme() == "http" && port == "80") ||
                            (parsed->scheme() == "https" && port == "443");
  if (!port.empty() && !default_port) key += ":" + std::string(port);
  key += ')';
  std::string_view path = parsed->encoded_path();
  key += path.empty() ? std::string_view("/") : path;
  std::string_view query = parsed->encoded_query();
  if (parsed->has_query() && !query.empty()) {
    std::vector<std::string_view> params;
    for (size_t pos = 0;;) {
      size_t amp = query.find('&', pos);
      params.push_back(query.substr(pos, amp - pos));
      if (amp == std::string_view::npos) break;
      pos = amp + 1;
    }
    std::sort(params.begin(), params.end());
    key += '?';
    for (size_t i = 0; i < params.size(); ++i) {
      if (i > 0) key += '&';
      key += params[i];
    }
  }
  return key;
}

void HttpFields(std::string_view head, std::string* status, std::string* mime) {
  status->clear();
  mime->clear();
  std::string_view first = head.substr(0, head.find("\r\n"));
  size_t sp = first.find(' ');
  if (sp != std::string_view::npos) {
    std::string_view code = first.substr(sp + 1, 3);
    if (code.size() == 3 && std::all_of(code.begin(), code.end(), ascii::IsDigit))
      *status = code;
  }
  ForEachHeader(head, true, [&](std::string_view name, std::string_view value) {
    if (EqualsIgnoreCase(name, "Content-Type"))
      *mime = Trim(value.substr(0, value.find(';')));
  });
}

std::string Timestamp(std::string_view warc_date) {
  std::string ts;
  for (char c : warc_date) {
    if (c == '-' || c == ':' || c == 'T') continue;
    ts += c;
    if (ts.size() == 14) break;
  }
  return ts;
}

std::string Head(const Fields& f) {
  std::string line = Surt(f.url) + " " + f.timestamp + " {\"url\":" + Quoted(f.url);
  if (!f.mime.empty()) line += ",\"mime\":" + Quoted(f.mime);
  if (!f.status.empty()) line += ",\"status\":\"" + f.status + "\"";
  if (!f.digest.empty()) line += ",\"digest\":" + Quoted(f.digest);
  return line;
}

std::string Tail(uint64_t offset, uint64_t length, std::string_view filename) {
  return ",\"length\":\"" + std::to_string(length) + "\",\"offset\":\"" +
         std::to_string(offset) + "\",\"filename\":" + Quoted(filename) + "}\n";
}

std::string PathFor(const std::string& warc_path) {
  std::string p = warc_path;
  for (std::string_view ext : {".warc.gz", ".warc"}) {
    if (p.ends_with(ext)) {
      p.resize(p.size() - ext.size());
      break;
    }
  }
  return p + ".cdxj";
}

Result<std::vector<std::string>> IndexFile(const std::string& warc_path, uint64_t limit) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(
      std::fopen(warc_path.c_str(), "rb"), &std::fclose);
  if (file == nullptr) return IoError(warc_path, "open");
  const std::string filename = std::filesystem::path(warc_path).filename().string();
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
    return Status::Error(Status::Code::kIoError, warc_path + ": inflateInit2 failed");
  std::unique_ptr<z_stream, int (*)(z_stream*)> end(&z, &inflateEnd);
  // Enough of each record for its WARC head and HTTP head; the rest of it
  // is inflated (to find where its member ends) and dropped.
  constexpr size_t kKeep = 256 * 1024;
  std::vector<unsigned char> in(1 << 20), out(1 << 16);
  std::string record;
  std::vector<std::string> lines;
  uint64_t read = 0, start = 0;
  bool open = false;  // inside a member
  for (;;) {
    if (z.avail_in == 0) {
      size_t n = std::fread(
          in.data(), 1, static_cast<size_t>(std::min<uint64_t>(in.size(), limit - read)),
          file.get());
      if (n == 0) {
        if (std::ferror(file.get()) != 0) return IoError(warc_path, "read");
        break;
      }
      z.next_in = in.data();
      z.avail_in = static_cast<uInt>(n);
      read += n;
    }
    open = true;
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    int rc = inflate(&z, Z_NO_FLUSH);
    size_t produced = out.size() - z.avail_out;
    if (record.size() < kKeep)
      record.append(reinterpret_cast<const char*>(out.data()),
                    std::min(produced, kKeep - record.size()));
    if (rc == Z_STREAM_END) {
      const uint64_t member_end = read - z.avail_in;
      std::string line = IndexRecord(record, start, member_end - start, filename);
      if (!line.empty()) lines.push_back(std::move(line));
      start = member_end;
      record.clear();
      open = false;
      inflateReset(&z);
    } else if (rc != Z_OK && !(rc == Z_BUF_ERROR && z.avail_in == 0)) {
      return Status::Error(Status::Code::kCorruption,
                           warc_path + ": no gzip member at offset " +
                               std::to_string(start) + " (" +
                               (z.msg != nullptr ? z.msg : "inflate failed") + ")");
    }
  }
  if (open && start < read) {
    return Status::Error(Status::Code::kCorruption,
                         warc_path + ": the record at offset " + std::to_string(start) +
                             " is cut short (a torn tail)");
  }
  return lines;
}

Status SortFile(const std::string& from, const std::string& to) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(from.c_str(), "rb"),
                                                       &std::fclose);
  if (file == nullptr) return IoError(from, "open");
  std::vector<std::string> lines;
  std::string line;
  char buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), file.get())) > 0) {
    for (size_t i = 0; i < n; ++i) {
      line += buf[i];
      if (buf[i] == '\n') lines.push_back(std::move(line)), line.clear();
    }
  }
  if (std::ferror(file.get()) != 0) return IoError(from, "read");
  file.reset();
  Status st = WriteSorted(to, std::move(lines));
  if (st.ok() && std::remove(from.c_str()) != 0) return IoError(from, "remove");
  return st;
}

Status WriteSorted(const std::string& path, std::vector<std::string> lines) {
  std::sort(lines.begin(), lines.end());
  return WriteFileAtomic(path, [&](std::FILE* f) {
    for (const std::string& line : lines) {
      if (std::fwrite(line.data(), 1, line.size(), f) != line.size())
        return IoError(path + ".tmp", "write");
    }
    return Status::Ok();
  });
}

}  // namespace crawler::output::cdxj
