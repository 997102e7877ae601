#include "engine/url_guards.h"

#include <algorithm>
#include <boost/url/parse.hpp>
#include <vector>

namespace crawler::engine {

namespace {

std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '/') {
      ++i;
      continue;
    }
    const size_t j = std::min(path.find('/', i), path.size());
    out.push_back(path.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace

uint32_t MostRepeats(std::string_view path) {
  const std::vector<std::string_view> s = Segments(path);
  const size_t n = s.size();
  if (n == 0) return 0;
  uint32_t most = 1;
  // For each run length p and start i, how many copies of s[i, i+p) follow
  // back to back. O(n^2) comparisons of segments per p at most; the path
  // segment guard runs first, so n is small.
  for (size_t p = 1; p <= n / 2; ++p) {
    for (size_t i = 0; i + 2 * p <= n; ++i) {
      uint32_t copies = 1;
      for (size_t j = i + p;
           j + p <= n && std::equal(s.begin() + i, s.begin() + i + p, s.begin() + j);
           j += p)
        ++copies;
      most = std::max(most, copies);
    }
  }
  return most;
}

const char* TrippedGuard(std::string_view url, const UrlGuards& g) {
  if (g.max_url_length != 0 && url.size() > g.max_url_length) return "url_length";
  // Links come here normalized (Boost.URL built them): one that does not
  // parse has no shape to judge.
  const auto u = boost::urls::parse_uri_reference(url);
  if (!u) return nullptr;
  const std::string_view path = u->encoded_path();
  if (g.max_path_segments != 0 && Segments(path).size() > g.max_path_segments)
    return "path_segments";
  if (g.max_repeats != 0 && MostRepeats(path) > g.max_repeats) return "repeated_segments";
  // The query's parameters as a form reads them ('&'-separated); "?" alone
  // has none.
  if (g.max_query_params != 0 && !u->encoded_query().empty() &&
      u->encoded_params().size() > g.max_query_params)
    return "query_params";
  return nullptr;
}

}  // namespace crawler::engine
