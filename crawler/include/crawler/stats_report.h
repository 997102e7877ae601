// `crawler stats OUT [--json] [--html FILE]`: the dedup / frontier / crawl
// report. Reads the newest of OUT/stats.json (rewritten by a running crawl
// every 2 s, and at its end) and the stats saved in OUT/checkpoint/ (or
// checkpoint.prev/) MANIFEST.json; reads only, never disturbs a running crawl.
// The JSON fields are documented in docs/stats.md.
#ifndef CRAWLER_STATS_REPORT_H_
#define CRAWLER_STATS_REPORT_H_

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace crawler::report {

// The newest report for OUT; *source says where it came from.
Result<boost::json::object> LoadStats(const std::string& out, std::string* source);
// The command; returns the exit code (0, or 2 when OUT has no report).
int RunStats(const std::string& out, bool json, const std::string& html_path);

}  // namespace crawler::report

#endif  // CRAWLER_STATS_REPORT_H_
