// The job's time line (kTimelineScript, heartbeats.h): each node's figures
// every few heartbeats, with Redis's used memory then, in one capped
// stream; and `crawler cluster-stats --html`, the one page for the whole
// cluster built from it and from what cluster-stats collects now.
#ifndef CRAWLER_CLUSTER_TIMELINE_H_
#define CRAWLER_CLUSTER_TIMELINE_H_

#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "cluster/redis/redis.h"
#include "report/stats_schema.h"

namespace crawler::cluster {

struct TimelinePoint {
  std::string node;
  double unix_s = 0;  // Redis's clock (the entry's ID): one clock for every node
  report::ClusterReport figures;
  uint64_t redis_bytes = 0;  // used_memory
  std::string load;          // the backlog it published (Balancer: "", "-" or a count)
};

// Every point of `prefix`'s time line, oldest first; a point it cannot read
// is skipped. Errors: Redis's (kIoError).
Result<std::vector<TimelinePoint>> ReadTimeline(Redis& redis, const std::string& prefix);

// The page: `collected` (cluster-stats's JSON: the nodes, leases, streams
// and memory now) above charts of the time line (pages and pages/s per node
// and in all, backlogs, leases, the exchange, Redis's memory and refusals,
// takeovers, handoffs and lease losses). Self-contained: inline SVG, no
// script, no asset.
std::string TimelineHtml(const boost::json::object& collected,
                         const std::vector<TimelinePoint>& points);

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_TIMELINE_H_
