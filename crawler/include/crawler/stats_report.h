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

namespace crawler::engine {

// The newest report for OUT; *source says where it came from.
Result<boost::json::object> LoadStats(const std::string& out, std::string* source);
// The command; returns the exit code (0, or 2 when OUT has no report).
int RunStats(const std::string& out, bool json, const std::string& html_path);

// `crawler cluster-stats redis://HOST:PORT --job J [--json]`: a cluster job as
// Redis sees it: nodes (alive, pages/s, shards), stream lag per shard,
// Redis memory per in-flight URL, totals. 2: no such job or no Redis.
int RunClusterStats(const std::string& redis_url, const std::string& job, bool json);

}  // namespace crawler::engine

#endif  // CRAWLER_STATS_REPORT_H_
