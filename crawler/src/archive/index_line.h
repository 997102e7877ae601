// Room archive/ (docs/architecture.md): one CDXJ index line (output/cdxj.h)
// split into what the archive's readers use, parsed once: the WACZ's
// pages and replay status (wacz.cc), earlier crawls' captures (earlier.h).
#ifndef CRAWLER_SRC_ARCHIVE_INDEX_LINE_H_
#define CRAWLER_SRC_ARCHIVE_INDEX_LINE_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace crawler::archive {

struct IndexLine {
  std::string_view key, ts;  // views of the line
  std::string url, mime, status, digest;
  size_t json_at = 0;  // where the JSON starts in the line
  bool ok = false;     // key, timestamp and a JSON object with url and status
};

// The line's key, timestamp and its JSON's string fields (url, mime, status,
// digest); `ok` false for a line that is not one.
IndexLine ParseIndexLine(std::string_view line);

// Sets the field `name` of `line`'s JSON (after its key and timestamp) to
// the string `value`: parsed, set and written again by Boost.JSON, the
// fields in their order. False, `line` as it was, if it has no JSON object.
bool SetIndexField(std::string* line, std::string_view name, std::string_view value);

}  // namespace crawler::archive

#endif  // CRAWLER_SRC_ARCHIVE_INDEX_LINE_H_
