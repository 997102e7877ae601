// Room output/ (the bottom of crawler/src, docs/architecture.md): what a
// crawl writes as it goes. The WARC writer (crawler/warc.h, warc.cc), this
// fetch log, a cluster node's seen log, the append-only file both sit on,
// and the lenient JSON field reader. It owns its
// record types (FetchLogResponse, not the fetcher's result) and includes no
// other room.
//
// OUT/fetch-log.jsonl: one JSON line per URL the crawl admitted and then
// fetched or skipped, and per robots.txt fetch:
//   {"url":…,"status":…,["content_type","bytes","fetch_ms",["truncated"],
//    ["location"],["ip"]],"depth":…,"referrer":…,["error"],["robots_txt":true]}
// Lines are built with Boost.JSON and written with one write(2) each
// (append_log.h). A failed write is returned as an error naming the file;
// the crawl stops on it.
//
// Thread-safe (AppendLog's mutex).
#ifndef CRAWLER_FETCH_LOG_H_
#define CRAWLER_FETCH_LOG_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "output/append_log.h"

namespace crawler::output {

// What a line keeps of a response (the fetcher fills it from its result:
// output/ owns its record types and knows nothing of the fetcher).
struct FetchLogResponse {
  std::string_view content_type;
  uint64_t bytes = 0;
  double seconds = 0;
  bool truncated = false;
  std::string_view location;  // a redirect's target, as sent
  std::string_view ip;        // the address connected to (as WARC-IP-Address)
};

struct FetchLogEntry {
  std::string_view url;
  long status = 0;                             // 0: no response (or skipped)
  const FetchLogResponse* response = nullptr;  // if fetched
  uint32_t depth = 0;
  std::string_view referrer;
  std::string_view error;  // FetchErrorName or a skip reason ("robots")
  bool robots_txt = false;
  uint32_t attempt = 1;  // pages: 1 for the first fetch, 2 for its first retry ...
  bool final = true;     // false: a transient failure that is tried again
  // [browser]: "rendered", "rendered-cap" (read at its cap, never idle), or
  // "render-failed: WHY" (archived as fetched); empty: not rendered.
  std::string_view render = {};
  uint32_t resources = 0;  // rendered: the responses archived with it
};

class FetchLog {
 public:
  // Opens (creates) PATH for appending.
  static Result<std::unique_ptr<FetchLog>> Open(const std::string& path);
  FetchLog(const FetchLog&) = delete;
  FetchLog& operator=(const FetchLog&) = delete;

  // The line for `e` (without the newline): exposed for tests.
  static std::string Line(const FetchLogEntry& e);
  [[nodiscard]] Status Append(const FetchLogEntry& e);
  // The file's length: every byte counted is in the file (a checkpoint records it).
  uint64_t Bytes() const { return file_->Bytes(); }
  [[nodiscard]] Status Sync() const { return file_->Sync(); }
  int fd() const { return file_->fd(); }
  const std::string& path() const { return file_->path(); }

 private:
  explicit FetchLog(std::unique_ptr<AppendLog> file) : file_(std::move(file)) {}
  std::unique_ptr<AppendLog> file_;
};

}  // namespace crawler::output

#endif  // CRAWLER_FETCH_LOG_H_
