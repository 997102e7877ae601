// CrawlCounts (crawler/crawl_counts.h) described with BOOST_DESCRIBE_STRUCT,
// so boost::json::value_from writes it and json_fields::ReadLenient reads it:
// MANIFEST.json's "counters" and stats.json's "crawl" (checkpoint/
// manifest_schema.h). The description is in the struct's own namespace,
// where Boost.Describe's lookup finds it. Fields: docs/formats.md.
#ifndef CRAWLER_ENGINE_CRAWL_COUNTS_SCHEMA_H_
#define CRAWLER_ENGINE_CRAWL_COUNTS_SCHEMA_H_

#include <boost/describe.hpp>

#include "crawler/crawl_counts.h"

namespace crawler::engine {

// clang-format off
BOOST_DESCRIBE_STRUCT(CrawlCounts, (), (fetched, failed, truncated, status_2xx, status_3xx,
    status_4xx, status_5xx, robots_blocked, unresolved, out_of_scope, too_deep, trap_guard,
    duplicates, filter_full, too_many_redirects, bytes, bytes_2xx, bytes_3xx, bytes_4xx,
    bytes_5xx, spilled, retries, gave_up, dns_deferred, other_address, rendered, render_failed, render_resources, forgotten, cannot_forget, revisits_not_modified,
    revisits_identical, revisits_changed, revisit_bytes_saved, history_forgotten,
    payload_revisits, payload_bytes_saved, revisit_intervals, revisit_demand_uhz, errors, guarded, lost, lost_hosts))
// clang-format on

}  // namespace crawler::engine

#endif  // CRAWLER_ENGINE_CRAWL_COUNTS_SCHEMA_H_
