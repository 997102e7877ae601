// WARC/1.1 output: OUT/warc/crawl-NNNNN.warc.gz.
//
// Each file starts with a warcinfo record; each fetch adds a request and a
// response record (linked by WARC-Concurrent-To), each record its own gzip
// member so readers can seek to any record and a torn tail loses at most the
// record being written. Response records carry WARC-Payload-Digest (SHA-1 of
// the HTTP body as received) and WARC-Block-Digest (SHA-1 of the whole HTTP
// message), both "sha1:<base32>"; a body cut at the size limit is marked
// WARC-Truncated: length. Files rotate when they reach rotate_bytes.
//
//   record := "WARC/1.1" CRLF *(header CRLF) CRLF block CRLF CRLF    (gzipped)
//
// Beside each WARC file, its CDXJ index (pywb's format, output/cdxj.h):
// lines are appended to crawl-NNNNN.cdxj.open as records are written, and
// sorted into crawl-NNNNN.cdxj when the WARC file is closed (at rotation or
// Close). A resume re-indexes the file it cut from the file itself
// (IndexWarc), so the index holds exactly the records that remain.
//
// Position() is what a checkpoint records (file index, bytes) so that resume
// can cut a torn tail. Thread-safe: one mutex serialises the appends (digests
// and compression run outside it, in the calling thread).
#ifndef CRAWLER_WARC_H_
#define CRAWLER_WARC_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/mutex.h"
#include "base/status.h"

namespace crawler::output {

struct WarcOptions {
  std::string dir;  // OUT/warc
  std::string prefix = "crawl";
  uint64_t rotate_bytes = uint64_t{1} << 30;  // 1 GiB
  int gzip_level = 6;  // libdeflate 1 (fastest) .. 12 (smallest); 6 ~ zlib's 6
  std::string software = "crawler/0.1";
  std::string operator_info;  // e.g. the contact URL from the config
  bool cdxj = true;           // write the CDXJ index beside each file
};

// What a revisit's record refers to (WARC/1.1 6.7): the earlier full
// capture. A revisit is written as a `revisit` record whose block is the
// HTTP response head only, with WARC-Profile
//   .../revisit/server-not-modified      a 304 to a conditional request;
//   .../revisit/identical-payload-digest a 200 whose payload digest is the
//                                        earlier capture's;
// and WARC-Refers-To, -Refers-To-Target-URI, -Refers-To-Date. Its
// WARC-Payload-Digest is the earlier capture's payload's (never the digest
// of a 304's empty body: openwayback#224).
struct Revisit {
  enum class Profile { kServerNotModified, kIdenticalPayloadDigest };
  Profile profile = Profile::kServerNotModified;
  std::string refers_to;  // the earlier response's WARC-Record-ID ("": unknown, left out)
  std::string refers_to_uri;                             // its WARC-Target-URI
  std::chrono::system_clock::time_point refers_to_date;  // its WARC-Date
  std::string payload_digest;  // its WARC-Payload-Digest ("sha1:BASE32")
};
std::string_view RevisitProfileUri(Revisit::Profile p);

// One fetch. The request, head and body are views of the caller's buffers
// (valid until Prepare or Write returns): the body is copied once, into the
// record libdeflate compresses, and not before.
struct Exchange {
  std::string url;
  std::string ip;  // "" if unknown
  std::chrono::system_clock::time_point date;
  std::string_view request;        // the HTTP request as sent
  std::string_view response_head;  // status line + headers, ending in CRLF CRLF
  std::string_view body;           // the body as received
  // Why the body is cut, as WARC-Truncated says it: "length" (the size
  // limit), "time" (a timeout mid-body), "disconnect" (the connection
  // ended mid-body); empty: whole.
  std::string_view truncated;
  // Set: the response is written as a revisit record (above), no body.
  std::optional<Revisit> revisit;
  // The body's payload digest if the caller computed it already ("": Prepare
  // computes it).
  std::string payload_digest;
  // More WARC headers of both records, each "Name: value\r\n" (a rendered
  // page's resources name their page: docs/rendering.md).
  std::string more_headers;
};

// The two gzipped records of one fetch, ready to append (Prepare does the
// digests and compression, the costly part, without any lock).
struct PreparedExchange {
  std::string response, request;
  std::string index_head;  // the response's CDXJ line up to its place in the file
  // The response (or revisit) record's WARC-Record-ID and payload digest:
  // what a later revisit refers to (the URL history keeps them).
  std::string response_id, payload_digest;
};

struct WarcPosition {
  uint32_t file_index = 0;
  uint64_t bytes = 0;  // size of that file
  std::string path;    // that file
  int fd = -1;         // its descriptor (for a checkpoint writer's fsync)
};

class WarcWriter {
 public:
  // Creates `dir` if needed and opens the first file after any existing
  // crawl-NNNNN.warc.gz in it (so a resumed crawl never appends to a closed file).
  static Result<std::unique_ptr<WarcWriter>> Open(const WarcOptions& options);
  ~WarcWriter();
  WarcWriter(const WarcWriter&) = delete;
  WarcWriter& operator=(const WarcWriter&) = delete;

  // Appends the request and response records of one fetch.
  [[nodiscard]] Status Write(const Exchange& exchange);
  // The same in two steps: Prepare (thread-safe, no lock), then Write.
  PreparedExchange Prepare(const Exchange& exchange) const;
  [[nodiscard]] Status Write(const PreparedExchange& prepared);
  // Closes the current file and sorts its index; nothing is written after.
  // The destructor does it if it was not done.
  [[nodiscard]] Status Close();
  // fflush + fsync of the current file (and its index).
  [[nodiscard]] Status Sync();
  WarcPosition Position() const;
  // fflush (no fsync), then Position(): every byte counted is in the file.
  [[nodiscard]] Result<WarcPosition> Flush();
  std::string CurrentPath() const;

 private:
  explicit WarcWriter(const WarcOptions& options) : options_(options) {}
  Status OpenNext() REQUIRES(mu_);
  Status Append(const std::string& record) REQUIRES(mu_);  // one gzip member
  Status AppendBytes(const std::string& bytes) REQUIRES(mu_);
  Status CloseFile() REQUIRES(mu_);  // the WARC file, then its index sorted

  const WarcOptions options_;
  mutable Mutex mu_;
  std::FILE* file_ GUARDED_BY(mu_) = nullptr;
  uint32_t index_ GUARDED_BY(mu_) = 0;
  uint64_t bytes_ GUARDED_BY(mu_) = 0;
  std::string path_ GUARDED_BY(mu_);
  std::FILE* cdxj_ GUARDED_BY(mu_) = nullptr;  // path_'s .cdxj.open
};

// Writes the CDXJ index of a WARC file (crawl-NNNNN.warc.gz ->
// crawl-NNNNN.cdxj, sorted), read from the file itself; returns the number
// of lines. For crawls written without an index, and for the file a resume cut.
[[nodiscard]] Result<uint64_t> IndexWarc(const std::string& warc_path);

// The response head as stored with a decoded body: libcurl hands over
// decoded bodies, so Content-Encoding, Content-Length and Transfer-Encoding
// are kept as X-Crawler-Original-* and a Content-Length of the stored body
// is added (unchanged if there was none of the three).
std::string HeadForStoredBody(const std::string& head, size_t body_size);

// The head of a 304 without a Content-Type as its server-not-modified
// revisit record stores it: the 304 as received plus the Content-Type of
// the capture it refers to (`content_type`), which a 304 need not repeat
// and a replay serves the revisit with (ReplayWeb.page takes the revisit's
// head; an SVG image or a font without its type does not show), marked by
// `X-Crawler-From-Capture: Content-Type`. Unchanged when `content_type` is
// empty (the capture had none).
std::string HeadForNotModified(const std::string& head, std::string_view content_type);

// "2026-11-22T14:40:14Z"
std::string WarcDate(std::chrono::system_clock::time_point t);

}  // namespace crawler::output

#endif  // CRAWLER_WARC_H_
