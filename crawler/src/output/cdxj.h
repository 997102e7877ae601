// CDXJ, pywb's index format, one line per indexed record:
//
//   SURT-KEY SP TIMESTAMP14 SP {"url":..,"mime":..,"status":"200",
//                               "digest":"<base32>","length":"N","offset":"N",
//                               "filename":"crawl-00000.warc.gz"}
//
// As `warcio cdx-index` (npm warcio 2.4) writes it, so that replay tools and
// our tests agree: response, revisit, resource and metadata records are
// indexed (not request or warcinfo); a revisit's mime is "warc/revisit"; a
// field with no value is left out; numbers are JSON strings. A file is
// sorted in byte order (LC_ALL=C sort) once its WARC is closed.
#ifndef CRAWLER_OUTPUT_CDXJ_H_
#define CRAWLER_OUTPUT_CDXJ_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace crawler::output::cdxj {

// warcio's getSurt: "https://www.Example.com:8080/a?b=1&a=2#f" ->
// "com,example:8080)/a?a=2&b=1" (scheme, www\d*. and the fragment dropped,
// lower case, the host reversed, a default port dropped, the query's
// parameters sorted). A URL that is not http(s) or does not parse is its own key.
std::string Surt(std::string_view url);

// What a line says about one record, before its place in the file is known.
struct Fields {
  std::string url;
  std::string timestamp;  // 14 digits
  std::string mime;       // "" leaves it out
  std::string status;     // "" leaves it out
  std::string digest;     // base32, no "sha1:"; "" leaves it out
};

// The HTTP status code and the media type (the Content-Type up to ';',
// trimmed) of a response head; each "" when absent.
void HttpFields(std::string_view head, std::string* status, std::string* mime);

// "2026-11-22T14:40:14Z" -> "20261122144014"
std::string Timestamp(std::string_view warc_date);

// One line, ending in '\n': Head (known when the record is made), then
// Tail (known when it is placed in its file).
std::string Head(const Fields& f);
std::string Tail(uint64_t offset, uint64_t length, std::string_view filename);
inline std::string Line(const Fields& f, uint64_t offset, uint64_t length,
                        std::string_view filename) {
  return Head(f) + Tail(offset, length, filename);
}

// OUT/warc/crawl-00000.warc.gz -> OUT/warc/crawl-00000.cdxj
std::string PathFor(const std::string& warc_path);

// The index of a WARC file of gzip members (one record each), read from
// the file itself: one line per indexed record, in file order. Errors name
// the file and the offset (a torn or foreign tail). With `limit`, only the
// file's first `limit` bytes are read (a running crawl's file, at its
// checkpoint's length).
Result<std::vector<std::string>> IndexFile(const std::string& warc_path,
                                           uint64_t limit = UINT64_MAX);

// Sorts the lines of the file `from` (a torn last line, with no '\n', is
// dropped) into `to`, atomically, and removes `from`.
[[nodiscard]] Status SortFile(const std::string& from, const std::string& to);

// Sorts `lines` in byte order and writes them to `path` atomically.
[[nodiscard]] Status WriteSorted(const std::string& path, std::vector<std::string> lines);

}  // namespace crawler::output::cdxj

#endif  // CRAWLER_OUTPUT_CDXJ_H_
