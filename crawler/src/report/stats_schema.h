// The JSON schemas of the crawler's own files, each written once: a struct
// per object, described with BOOST_DESCRIBE_STRUCT, so boost::json::value_from
// writes it and json_fields::ReadLenient reads it (key = member name).
//
//   stats.json, and "stats" in MANIFEST.json   StatsReport
//   stats-series.jsonl (one line per refresh)  SeriesPoint
//
// MANIFEST.json's (ManifestDoc) and the crawl's counts' (CrawlCounts) are
// checkpoint/manifest_schema.h's, a room below.
//
// The fields are documented in docs/stats.md and docs/formats.md.
#ifndef CRAWLER_STATS_SCHEMA_H_
#define CRAWLER_STATS_SCHEMA_H_

#include <boost/describe.hpp>
#include <boost/json.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "checkpoint/manifest_schema.h"
#include "crawler/checkpoint.h"
#include "crawler/crawl_counts.h"
#include "dedup/filter.h"

namespace crawler::report {

// ---- stats.json ----

struct StripeFill {
  uint64_t stripe = 0;
  double fill = 0;
  uint64_t items = 0;
  uint64_t layers = 0;
  double estimated_fpr = 0;
};
BOOST_DESCRIBE_STRUCT(StripeFill, (), (stripe, fill, items, layers, estimated_fpr))

// "dedup": the filter's figures and what the crawl derives from them.
struct DedupReport {
  std::string variant;
  uint64_t stripes = 0, layers_min = 0, layers_max = 0;
  uint64_t items = 0, capacity = 0, bytes = 0;
  double bits_per_item = 0, fill = 0, estimated_fpr = 0, fpr_bound = 0;
  uint64_t inserts_new = 0, inserts_duplicate = 0;
  double duplicate_rate = 0;       // inserts_duplicate / all inserts
  double expected_false_seen = 0;  // sum of the FPR at each new URL
  uint64_t relocations = 0, saturations = 0, inserts_full = 0;
  // Compaction (dedup/include/dedup/filter.h): rebuilds over the crawl,
  // their time, stripes with a hash log, and its buffers (not in `bytes`).
  uint64_t compactions = 0;
  double compaction_s = 0;
  uint64_t logged_stripes = 0, log_buffer_bytes = 0;
  std::vector<StripeFill> fullest_stripes;  // the five fullest
};
// clang-format off
BOOST_DESCRIBE_STRUCT(DedupReport, (), (variant, stripes, layers_min, layers_max, items,
    capacity, bytes, bits_per_item, fill, estimated_fpr, fpr_bound, inserts_new,
    inserts_duplicate, duplicate_rate, expected_false_seen, relocations, saturations,
    inserts_full, compactions, compaction_s, logged_stripes, log_buffer_bytes,
    fullest_stripes))
// clang-format on

struct DepthCount {
  uint64_t depth = 0, urls = 0;
};
BOOST_DESCRIBE_STRUCT(DepthCount, (), (depth, urls))

struct FrontierReport {
  uint64_t queued_memory = 0, queued_disk = 0, in_flight = 0;
  uint64_t hosts = 0, hosts_ready = 0, hosts_waiting_politeness = 0;
  uint64_t hosts_waiting_ip = 0;  // of those: held for their address (per-IP politeness)
  uint64_t addresses = 0;         // addresses the hosts are on (known so far)
  uint64_t hosts_waiting_robots = 0, hosts_blocked_robots = 0;
  uint64_t hosts_backing_off = 0, hosts_parked = 0;  // any state besides
  uint64_t spilled = 0;  // URLs ever written to disk, over all runs
  std::vector<DepthCount> depths;
};
// clang-format off
BOOST_DESCRIBE_STRUCT(FrontierReport, (), (queued_memory, queued_disk, in_flight, hosts,
    hosts_ready, hosts_waiting_politeness, hosts_waiting_ip, addresses,
    hosts_waiting_robots, hosts_blocked_robots,
    hosts_backing_off, hosts_parked, spilled, depths))
// clang-format on

struct HostCount {
  std::string host;
  uint64_t fetched = 0;
};
BOOST_DESCRIBE_STRUCT(HostCount, (), (host, fetched))

// "crawl": CrawlCounts and these, in one flat object.
struct CrawlRates {
  uint64_t pages = 0;  // fetched + failed
  double elapsed_s = 0, pages_per_s = 0, pages_per_s_last_minute = 0;
  std::vector<HostCount> top_hosts;
};
BOOST_DESCRIBE_STRUCT(CrawlRates, (),
                      (pages, elapsed_s, pages_per_s, pages_per_s_last_minute, top_hosts))

// "cluster": this node of a multi-machine crawl (empty node: single machine);
// also what each node publishes to Redis for `crawler cluster-stats`.
struct ClusterReport {
  std::string node, job;
  uint64_t nodes = 0, shards_owned = 0;
  uint64_t urls_sent = 0, batches_sent = 0;         // confirmed by Redis
  uint64_t urls_received = 0, batches_applied = 0;  // from other nodes, admitted here
  uint64_t urls_queued = 0;                         // waiting to be sent (all)
  uint64_t urls_held = 0;         // of those: for shards over their lag limit, in RAM
  uint64_t urls_on_disk = 0;      // of those: in spill files (OUT/cluster-outbox)
  uint64_t malformed = 0;         // stream entries skipped
  double redis_down_s = 0;        // 0: connected
  uint64_t redis_reconnects = 0;  // the exchange's connection lost and made again
  uint64_t leases_held = 0;       // owned shards whose lease this node holds now
  uint64_t lease_losses = 0;      // leases that expired or went to another holder
  uint64_t acks_fenced = 0;       // acknowledges Redis refused (a lease lost)
  uint64_t fetches_deferred = 0;  // URLs put back: their shard's lease not held
  uint64_t sends_refused = 0;     // batch sends Redis refused (full): held, sent again
  // Why Redis refuses this node's sends now ("full (maxmemory reached,
  // OOM)", ...): urls_queued wait; "" while it takes them.
  std::string sends_blocked;
  uint64_t shards_given = 0;  // handed to a less loaded node (work-aware placement)
  // Politeness per address over the job (cluster.ip_politeness): turns
  // Redis gave, asks it answered "wait", turns granted without it (Redis
  // could not be asked: this node polite on its own meanwhile), and turns
  // Redis gave that no request took within its claim (given back).
  uint64_t address_turns = 0, address_waits = 0, address_turns_local = 0,
           address_turns_unused = 0;
  // Takeovers: loads of shards from another node's checkpoint, and the one
  // that queued the most URLs: its seconds, URLs, and when it ended (Unix s).
  uint64_t shard_loads = 0;
  double biggest_load_s = 0;
  uint64_t biggest_load_urls = 0;
  double biggest_load_end_unix = 0;
  uint64_t pages = 0;
  double pages_per_s = 0;  // over the last minute
  double updated_unix = 0;
};
// clang-format off
BOOST_DESCRIBE_STRUCT(ClusterReport, (), (node, job, nodes, shards_owned, urls_sent,
    batches_sent, urls_received, batches_applied, urls_queued, urls_held, urls_on_disk,
    malformed, redis_down_s, redis_reconnects, leases_held, lease_losses, acks_fenced, fetches_deferred,
    sends_refused, sends_blocked, shards_given, address_turns, address_waits,
    address_turns_local, address_turns_unused, shard_loads, biggest_load_s, biggest_load_urls,
    biggest_load_end_unix, pages, pages_per_s, updated_unix))
// clang-format on

// "recrawl": a continuous crawl's URL history ([recrawl] on). The due count
// walks the history's due index: at most this many entries.
inline constexpr uint64_t kDueCountCap = 100'000;
struct RecrawlReport {
  bool enabled = false;
  uint64_t due = 0;         // URLs due now and not yet queued, counted up to ...
  bool due_capped = false;  // ... kDueCountCap: more are
  double mu = 0;            // adapt = "change-rate": the price of freshness (s)
};
BOOST_DESCRIBE_STRUCT(RecrawlReport, (), (enabled, due, due_capped, mu))

// "dns": the crawler's own DNS (crawler/resolver.h), this run's figures
// (the cache is not checkpointed: a resume looks each host up again).
struct DnsReport {
  bool enabled = false;    // false: libcurl resolves (a proxy, or no resolver)
  uint64_t queries = 0;    // lookups sent, refreshes included
  uint64_t hits = 0;       // fetches whose host was answered from the cache
  uint64_t misses = 0;     // lookups started for want of a valid answer (waited for)
  double hit_ratio = 0;    // hits / (hits + misses)
  uint64_t refreshes = 0;  // lookups sent ahead of an entry's expiry
  uint64_t not_found = 0;  // NXDOMAIN or no address record
  uint64_t failed = 0;     // SERVFAIL, REFUSED, malformed answers
  uint64_t timeouts = 0;   // no answer after every try
  uint64_t entries = 0;    // in the cache now
  double latency_p50_ms = 0, latency_p99_ms = 0;  // answered lookups (within 19%)
};
BOOST_DESCRIBE_STRUCT(DnsReport, (),
                      (enabled, queries, hits, misses, hit_ratio, refreshes, not_found,
                       failed, timeouts, entries, latency_p50_ms, latency_p99_ms))

// "browser": [browser] render's pool, this run's figures (docs/rendering.md;
// the pages rendered are crawl.rendered, kept across resumes).
struct BrowserReport {
  bool enabled = false;     // browser.render is not "off"
  uint64_t started = 0;     // browsers started, restarts included
  uint64_t deaths = 0;      // browsers found dead after a page
  uint64_t retried = 0;     // pages rendered again after a death or a hang
  double render_p50_s = 0;  // a rendered page's time in the browser (within 19%)
  double render_p99_s = 0;
  double cpu_s = 0;        // the browsers' CPU, their helpers' included
  double crawl_cpu_s = 0;  // the crawler process's own CPU
  double cpu_share = 0;    // cpu_s / (cpu_s + crawl_cpu_s)
};
BOOST_DESCRIBE_STRUCT(BrowserReport, (),
                      (enabled, started, deaths, retried, render_p50_s, render_p99_s,
                       cpu_s, crawl_cpu_s, cpu_share))

// "memory": the process's memory and the bytes each part holds, counted
// from its structures at each refresh (base/heap_bytes.h; docs/stats.md).
struct MemoryReport {
  std::string allocator;   // "jemalloc" (the crawler's) or "glibc"
  uint64_t rss = 0;        // resident set size
  uint64_t allocated = 0;  // heap in use, as the allocator counts it
  uint64_t allocator_resident =
      0;                        // the allocator's resident pages (allocated and spare)
  uint64_t filter = 0;          // the dedup filter's tables and log buffers
  uint64_t frontier_urls = 0;   // URLs queued in RAM, leased, buffered for spill
  uint64_t frontier_hosts = 0;  // the frontier's per-host state
  uint64_t frontier_addresses = 0;  // its per-address records (politeness per address)
  uint64_t host_table = 0;          // robots.txt rules, per-host counts, domain budgets
  uint64_t dns = 0;                 // the DNS cache and its queue
  uint64_t scope = 0;               // the hosts in scope (the seeds'), listed and indexed
  uint64_t robots_queue = 0;        // robots.txt fetches waiting for room in a fetcher
  uint64_t bodies = 0;              // response bodies in RAM: transfers, results waiting
  uint64_t other = 0;  // rss minus the parts (code, stacks, libraries, allocator)
};
BOOST_DESCRIBE_STRUCT(MemoryReport, (),
                      (allocator, rss, allocated, allocator_resident, filter,
                       frontier_urls, frontier_hosts, frontier_addresses, host_table, dns,
                       scope, robots_queue, bodies, other))

struct StatsReport {
  uint64_t version = 1;
  double updated_unix = 0;
  bool running = false;
  std::string out;
  DedupReport dedup;
  FrontierReport frontier;
  engine::CrawlCounts crawl;  // "crawl": these two, flat
  CrawlRates rates;
  checkpoint::CheckpointFigures checkpoint;
  ClusterReport cluster;
  RecrawlReport recrawl;
  DnsReport dns;
  MemoryReport memory;
  BrowserReport browser;
};
// "crawl" is written and read by hand (two structs in one object).
BOOST_DESCRIBE_STRUCT(StatsReport, (),
                      (version, updated_unix, running, out, dedup, frontier, checkpoint,
                       cluster, recrawl, dns, memory, browser))

boost::json::object ToJson(const StatsReport& r);
StatsReport StatsReportFromJson(const boost::json::value& v);

// ---- stats-series.jsonl ----

struct SeriesPoint {
  double t = 0;  // crawl seconds
  uint64_t pages = 0;
  double pages_per_s = 0;  // over the last minute
  uint64_t dedup_items = 0;
  double fpr = 0, fpr_bound = 0;
  uint64_t queued = 0;  // RAM + disk
};
BOOST_DESCRIBE_STRUCT(SeriesPoint, (),
                      (t, pages, pages_per_s, dedup_items, fpr, fpr_bound, queued))

}  // namespace crawler::report

#endif  // CRAWLER_STATS_SCHEMA_H_
