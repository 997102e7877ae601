// The "Name: value" lines of an HTTP head as stored (a status or request
// line, headers, CRLF CRLF): the CDXJ indexer's (cdxj.cc) and the engine's
// (a page's headers given to the browser: engine/worker_render.cc).
#ifndef CRAWLER_OUTPUT_HTTP_HEAD_H_
#define CRAWLER_OUTPUT_HTTP_HEAD_H_

#include <string_view>

#include "base/ascii.h"

namespace crawler::output {

// Calls `each(name, value)` for each "Name: value" line of a head (after
// its first line when `skip_first`), up to the blank line or the end; name
// and value trimmed.
template <class Each>
void ForEachHeader(std::string_view head, bool skip_first, Each each) {
  size_t pos = 0;
  bool first = skip_first;
  while (pos < head.size()) {
    size_t end = head.find("\r\n", pos);
    if (end == std::string_view::npos) end = head.size();
    std::string_view line = head.substr(pos, end - pos);
    pos = end + 2;
    if (line.empty()) break;
    if (first) {
      first = false;
      continue;
    }
    size_t colon = line.find(':');
    if (colon != std::string_view::npos)
      each(ascii::Trim(line.substr(0, colon)), ascii::Trim(line.substr(colon + 1)));
  }
}

}  // namespace crawler::output

#endif  // CRAWLER_OUTPUT_HTTP_HEAD_H_
