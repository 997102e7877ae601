// What the crawls of the synthetic internet (web_test.cc,
// web_guards_test.cc) check against: the traps' truth under the guards;
// the crawl's stats.json and fetch log; the server's requests per address.
#ifndef TESTS_TESTSITE_WEB_CRAWL_H_
#define TESTS_TESTSITE_WEB_CRAWL_H_

#include <algorithm>
#include <boost/json.hpp>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "crawl_output.h"
#include "testsite_process.h"
#include "web.h"

namespace crawler::testsite {

// The paths of trap t (kRepeat or kQuery, web.h) a crawl fetches when a run of
// path segments may repeat at most `max_repeats` times in a row and a
// query have at most `max_params` parameters (0: no limit), following
// the trap's one link per page from "/" (each limit must be > 0: the
// trap has no end). Other traps: empty.
inline std::vector<std::string> GuardedTrapPaths(uint32_t t, uint32_t max_repeats,
                                                 uint32_t max_params) {
  std::vector<std::string> out = {"/"};
  if (t == kRepeat) {
    // n segments "a/b/a/..." hold floor(n/2) copies of "a/b/" in a row,
    // and no segment twice in a row.
    std::string path = "/";
    for (uint32_t n = 1; n / 2 <= max_repeats; ++n) {
      path += n % 2 == 1 ? "a/" : "b/";
      out.push_back(path);
    }
  } else if (t == kQuery) {
    std::string query;
    for (uint32_t k = 0; k < max_params; ++k) {
      query += (k == 0 ? "" : "&") + std::string("k") + std::to_string(k) + "=v" +
               std::to_string(k);
      out.push_back("/q?" + query);
    }
  } else {
    out.clear();
  }
  return out;
}

// Reads OUT/stats.json's object `key` ("dns", "crawl", ...).
inline boost::json::object StatsPart(const std::string& out, const char* key) {
  return testing::ReadStats(out).at(key).as_object();
}
inline boost::json::object DnsStats(const std::string& out) {
  return StatsPart(out, "dns");
}

// The most requests in progress at once at each address (from a request's
// arrival to its answer's first byte: inside the crawler's own span).
inline std::map<std::string, int> PeakPerAddress(
    const std::vector<testing::ServedRequest>& requests) {
  std::map<std::string, std::vector<std::pair<uint64_t, int>>> events;
  for (const testing::ServedRequest& q : requests) {
    events[q.local].push_back({q.start_us, +1});
    events[q.local].push_back({q.reply_us, -1});
  }
  std::map<std::string, int> peak;
  for (auto& [address, ev] : events) {
    std::sort(ev.begin(), ev.end());  // an end before a start at the same instant
    int open = 0;
    for (const auto& [t, d] : ev) peak[address] = std::max(peak[address], open += d);
  }
  return peak;
}

// The fetch log's lines, parsed.
inline std::vector<boost::json::object> FetchLogLines(const std::string& out) {
  std::vector<boost::json::object> lines;
  std::ifstream in(out + "/fetch-log.jsonl");
  for (std::string line; std::getline(in, line);)
    lines.push_back(boost::json::parse(line).as_object());
  return lines;
}

}  // namespace crawler::testsite

#endif  // TESTS_TESTSITE_WEB_CRAWL_H_
