// Trap guards on a URL's shape, checked before a link reaches the dedup
// filter (so a trap costs no filter space): too long, too many path
// segments, a run of segments repeated back to back ("/a/b/a/b/a/b/",
// browsertrix-crawler#931's self-concatenation), too many query
// parameters (an ever-longer query string). Each limit is a [crawl] key;
// 0 turns it off. Pure functions: any thread may call them.
#ifndef CRAWLER_URL_GUARDS_H_
#define CRAWLER_URL_GUARDS_H_

#include <cstdint>
#include <string_view>

#include "crawler/config.h"

namespace crawler::engine {

struct UrlGuards {
  // Heritrix's limits where it has one: a URL of at most 2,083 characters
  // (its UURI's MAX_URL_LENGTH), at most 20 path segments (its
  // TooManyPathSegmentsDecideRule), a segment run seen at most 2 times in a
  // row (its PathologicalPathDecideRule). Query parameters: 32 (no Heritrix
  // rule; docs/crawling.md, "Trap guards", says how it was chosen).
  uint32_t max_url_length = 2083;
  uint32_t max_path_segments = 20;
  uint32_t max_repeats = 2;
  uint32_t max_query_params = 32;
};

// The [crawl] keys' limits.
inline UrlGuards GuardsOf(const CrawlConfig& c) {
  return {c.max_url_length, c.max_path_segments, c.max_repeated_segments,
          c.max_query_params};
}

// The guard `url` (absolute, normalized) trips, by its reason name
// ("url_length", "path_segments", "repeated_segments", "query_params"), or
// nullptr if none.
const char* TrippedGuard(std::string_view url, const UrlGuards& guards);

// The most times in a row any run of path segments repeats in `path` (1 for
// a path without repeats, 0 for "/"). "/a/b/a/b/" has 2, "/x/x/x" 3.
uint32_t MostRepeats(std::string_view path);

}  // namespace crawler::engine

#endif  // CRAWLER_URL_GUARDS_H_
