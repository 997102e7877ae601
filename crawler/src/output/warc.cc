// WARC/1.1 writer; see crawler/warc.h.
#include "crawler/warc.h"

#include <fmt/core.h>
#include <libdeflate.h>
#include <unistd.h>

#include <boost/uuid/random_generator.hpp>
#include <boost/uuid/uuid_io.hpp>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <initializer_list>
#include <string_view>

#include "base/ascii.h"
#include "base/file_util.h"
#include "base/sha1.h"
#include "output/cdxj.h"

namespace crawler::output {
namespace {

// A version-4 (random) UUID per record, as WARC 1.1 recommends.
std::string RecordId() {
  static thread_local boost::uuids::random_generator generate;
  return "<urn:uuid:" + boost::uuids::to_string(generate()) + ">";
}

// A record whose block is `parts` one after another, built in one buffer
// (the block is not assembled apart first).
std::string Record(const std::string& type, const std::string& id,
                   const std::string& headers, const std::string& content_type,
                   std::initializer_list<std::string_view> parts) {
  size_t block = 0;
  for (std::string_view part : parts) block += part.size();
  std::string head = "WARC/1.1\r\nWARC-Type: " + type + "\r\nWARC-Record-ID: " + id +
                     "\r\n" + headers + "Content-Type: " + content_type +
                     "\r\nContent-Length: " + std::to_string(block) + "\r\n\r\n";
  std::string r;
  r.reserve(head.size() + block + 4);
  r += head;
  for (std::string_view part : parts) r += part;
  r += "\r\n\r\n";
  return r;
}

}  // namespace

std::string WarcDate(std::chrono::system_clock::time_point t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Result<std::unique_ptr<WarcWriter>> WarcWriter::Open(const WarcOptions& options) {
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec) {
    return Status::Error(Status::Code::kIoError,
                         options.dir + ": cannot create: " + ec.message());
  }
  std::unique_ptr<WarcWriter> w(new WarcWriter(options));
  MutexLock lock(w->mu_);
  // Continue numbering after the files already there.
  for (const auto& entry : std::filesystem::directory_iterator(options.dir, ec)) {
    std::string name = entry.path().filename().string();
    unsigned n = 0;
    if (std::sscanf(name.c_str(), (options.prefix + "-%05u.warc.gz").c_str(), &n) == 1) {
      w->index_ = std::max(w->index_, n + 1);
    }
  }
  Status st = w->OpenNext();
  if (!st.ok()) return st;
  return w;
}

WarcWriter::~WarcWriter() {
  MutexLock lock(mu_);
  (void)CloseFile();
}

Status WarcWriter::Close() {
  MutexLock lock(mu_);
  return CloseFile();
}

Status WarcWriter::CloseFile() {
  if (file_ == nullptr) return Status::Ok();
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!closed) return IoError(path_, "close");
  if (cdxj_ == nullptr) return Status::Ok();
  const std::string open = cdxj::PathFor(path_) + ".open";
  const bool index_closed = std::fclose(cdxj_) == 0;
  cdxj_ = nullptr;
  if (!index_closed) return IoError(open, "close");
  return cdxj::SortFile(open, cdxj::PathFor(path_));
}

Status WarcWriter::OpenNext() {
  if (file_ != nullptr) {
    Status st = CloseFile();
    if (!st.ok()) return st;
    ++index_;
  }
  const std::string name = fmt::format("{}-{:05}.warc.gz", options_.prefix, index_);
  path_ = options_.dir + "/" + name;
  file_ = std::fopen(path_.c_str(), "wbx");  // never overwrite an existing file
  if (file_ == nullptr) return IoError(path_, "create");
  if (options_.cdxj) {
    const std::string open = cdxj::PathFor(path_) + ".open";
    cdxj_ = std::fopen(open.c_str(), "wb");
    if (cdxj_ == nullptr) return IoError(open, "create");
  }
  bytes_ = 0;
  std::string fields =
      "software: " + options_.software + "\r\nformat: WARC File Format 1.1\r\n";
  if (!options_.operator_info.empty())
    fields += "operator: " + options_.operator_info + "\r\n";
  std::string headers = "WARC-Date: " + WarcDate(std::chrono::system_clock::now()) +
                        "\r\nWARC-Filename: " + name + "\r\n";
  return Append(
      Record("warcinfo", RecordId(), headers, "application/warc-fields", {fields}));
}

namespace {

// One gzip member holding `record`, or "" if compression failed. libdeflate
// compresses a whole buffer at once, which is what a record is: on the
// crawl bench's pages (tests/bench/gzip_bench.cc) its level 6 is 1.8x zlib
// level 6's speed for 1.2% more bytes; ISA-L's levels were 14-39% bigger.
// A compressor per thread and level (libdeflate's are not thread-safe).
std::string GzipMember(const std::string& record, int level) {
  struct Compressor {
    libdeflate_compressor* c = nullptr;
    int level = -1;
    ~Compressor() {
      if (c != nullptr) libdeflate_free_compressor(c);
    }
  };
  static thread_local Compressor tl;
  if (tl.level != level) {
    if (tl.c != nullptr) libdeflate_free_compressor(tl.c);
    tl.c = libdeflate_alloc_compressor(level);
    tl.level = tl.c != nullptr ? level : -1;
  }
  if (tl.c == nullptr) return {};
  std::string out(libdeflate_gzip_compress_bound(tl.c, record.size()), '\0');
  size_t n = libdeflate_gzip_compress(tl.c, record.data(), record.size(), out.data(),
                                      out.size());
  out.resize(n);
  return out;
}

}  // namespace

Status WarcWriter::Append(const std::string& record) {
  std::string member = GzipMember(record, options_.gzip_level);
  if (member.empty())
    return Status::Error(Status::Code::kIoError, path_ + ": deflate failed");
  return AppendBytes(member);
}

Status WarcWriter::AppendBytes(const std::string& bytes) {
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size())
    return IoError(path_, "write");
  bytes_ += bytes.size();
  return Status::Ok();
}

std::string_view RevisitProfileUri(Revisit::Profile p) {
  return p == Revisit::Profile::kServerNotModified
             ? "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
             : "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest";
}

PreparedExchange WarcWriter::Prepare(const Exchange& ex) const {
  const std::string date = WarcDate(ex.date);
  const std::string request_id = RecordId();
  const std::string response_id = RecordId();
  std::string common = "WARC-Date: " + date + "\r\nWARC-Target-URI: " + ex.url + "\r\n";
  if (!ex.ip.empty()) common += "WARC-IP-Address: " + ex.ip + "\r\n";
  common += ex.more_headers;

  PreparedExchange out;
  out.response_id = response_id;
  // A revisit's block is the head alone; its payload digest is the earlier
  // capture's (warc.h).
  const std::string_view body = ex.revisit ? std::string_view() : ex.body;
  out.payload_digest = ex.revisit                   ? ex.revisit->payload_digest
                       : !ex.payload_digest.empty() ? ex.payload_digest
                                                    : WarcDigest(body);
  // The block (head + body) is digested and written from its two parts.
  std::string response_headers =
      common + "WARC-Payload-Digest: " + out.payload_digest +
      "\r\nWARC-Block-Digest: " + WarcDigest({ex.response_head, body}) + "\r\n";
  if (ex.revisit) {
    // WARC-Refers-To is left out when the capture's record id is not known
    // (an earlier crawl's, read from its index: archive/earlier.h).
    response_headers +=
        "WARC-Profile: " + std::string(RevisitProfileUri(ex.revisit->profile)) + "\r\n" +
        (ex.revisit->refers_to.empty()
             ? ""
             : "WARC-Refers-To: " + ex.revisit->refers_to + "\r\n") +
        "WARC-Refers-To-Target-URI: " + ex.revisit->refers_to_uri +
        "\r\nWARC-Refers-To-Date: " + WarcDate(ex.revisit->refers_to_date) + "\r\n";
  } else if (!ex.truncated.empty()) {
    response_headers += "WARC-Truncated: " + std::string(ex.truncated) + "\r\n";
  }
  if (options_.cdxj) {
    cdxj::Fields f;
    f.url = ex.url;
    f.timestamp = cdxj::Timestamp(date);
    cdxj::HttpFields(ex.response_head, &f.status, &f.mime);
    if (ex.revisit) f.mime = "warc/revisit";  // as pywb and warcio index revisits
    f.digest = out.payload_digest.substr(out.payload_digest.find(':') + 1);
    out.index_head = cdxj::Head(f);
  }
  out.response = GzipMember(
      Record(ex.revisit ? "revisit" : "response", response_id, response_headers,
             "application/http;msgtype=response", {ex.response_head, body}),
      options_.gzip_level);
  std::string request_headers = common + "WARC-Concurrent-To: " + response_id +
                                "\r\nWARC-Block-Digest: " + WarcDigest(ex.request) +
                                "\r\n";
  out.request = GzipMember(Record("request", request_id, request_headers,
                                  "application/http;msgtype=request", {ex.request}),
                           options_.gzip_level);
  return out;
}

Status WarcWriter::Write(const PreparedExchange& prepared) {
  MutexLock lock(mu_);
  if (prepared.response.empty() || prepared.request.empty()) {
    return Status::Error(Status::Code::kIoError, path_ + ": deflate failed");
  }
  if (bytes_ >= options_.rotate_bytes) {
    Status st = OpenNext();
    if (!st.ok()) return st;
  }
  const uint64_t offset = bytes_;
  Status st = AppendBytes(prepared.response);
  if (!st.ok()) return st;
  if (cdxj_ != nullptr && !prepared.index_head.empty()) {
    std::string line =
        prepared.index_head +
        cdxj::Tail(offset, prepared.response.size(), path_.substr(path_.rfind('/') + 1));
    if (std::fwrite(line.data(), 1, line.size(), cdxj_) != line.size())
      return IoError(cdxj::PathFor(path_) + ".open", "write");
  }
  return AppendBytes(prepared.request);
}

Status WarcWriter::Write(const Exchange& ex) {
  // Digests and compression happen before taking the lock, so workers do
  // them in parallel; only the appends are serialised.
  return Write(Prepare(ex));
}

Status WarcWriter::Sync() {
  MutexLock lock(mu_);
  if (file_ == nullptr) return Status::Ok();
  if (std::fflush(file_) != 0) return IoError(path_, "flush");
  if (::fsync(fileno(file_)) != 0) return IoError(path_, "fsync");
  if (cdxj_ != nullptr && (std::fflush(cdxj_) != 0 || ::fsync(fileno(cdxj_)) != 0))
    return IoError(cdxj::PathFor(path_) + ".open", "flush");
  return Status::Ok();
}

WarcPosition WarcWriter::Position() const {
  MutexLock lock(mu_);
  return WarcPosition{index_, bytes_, path_, file_ != nullptr ? fileno(file_) : -1};
}

Result<WarcPosition> WarcWriter::Flush() {
  MutexLock lock(mu_);
  if (file_ == nullptr) return Status::Error(Status::Code::kIoError, path_ + ": closed");
  if (std::fflush(file_) != 0) return IoError(path_, "flush");
  if (cdxj_ != nullptr && std::fflush(cdxj_) != 0)
    return IoError(cdxj::PathFor(path_) + ".open", "flush");
  return WarcPosition{index_, bytes_, path_, fileno(file_)};
}

std::string WarcWriter::CurrentPath() const {
  MutexLock lock(mu_);
  return path_;
}

namespace {

using ascii::StartsWithIgnoreCase;

}  // namespace

Result<uint64_t> IndexWarc(const std::string& warc_path) {
  auto lines = cdxj::IndexFile(warc_path);
  if (!lines.ok()) return lines.status();
  const uint64_t n = lines->size();
  Status st = cdxj::WriteSorted(cdxj::PathFor(warc_path), std::move(lines).value());
  if (!st.ok()) return st;
  return n;
}

std::string HeadForNotModified(const std::string& head, std::string_view content_type) {
  if (content_type.empty() || head.size() < 4 ||
      head.compare(head.size() - 4, 4, "\r\n\r\n") != 0)
    return head;
  return head.substr(0, head.size() - 2) + "Content-Type: " + std::string(content_type) +
         "\r\nX-Crawler-From-Capture: Content-Type\r\n\r\n";
}

std::string HeadForStoredBody(const std::string& head, size_t body_size) {
  // Lines are looked at in place (no copy per line); a head with nothing to
  // rename is returned as it is.
  auto renamed = [](std::string_view line) {
    return StartsWithIgnoreCase(line, "content-encoding:") ||
           StartsWithIgnoreCase(line, "content-length:") ||
           StartsWithIgnoreCase(line, "transfer-encoding:");
  };
  std::string out;
  bool changed = false;
  size_t pos = 0;
  const std::string_view all(head);
  while (pos < all.size()) {
    size_t end = all.find("\r\n", pos);
    if (end == std::string_view::npos) end = all.size();
    std::string_view line = all.substr(pos, end - pos);
    pos = end + 2;
    if (line.empty()) break;
    if (renamed(line)) {
      out += "X-Crawler-Original-";
      changed = true;
    }
    out += line;
    out += "\r\n";
  }
  if (!changed) return head;
  return out + "Content-Length: " + std::to_string(body_size) + "\r\n\r\n";
}

}  // namespace crawler::output
