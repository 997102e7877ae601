// The crawl configuration: TOML files (configs/default.toml documents every
// key) plus --set overrides, validated against one schema.
//
// Every key has a type and a range. An unknown key, a wrong type or an
// out-of-range value is an error naming the file, the line and the key
// ("configs/my.toml:12: frontier.max_memroy_urls: unknown key"). Keys that
// are absent keep their defaults (the values in this header, which
// configs/default.toml repeats). Values are plain data: copy freely.
#ifndef CRAWLER_CONFIG_H_
#define CRAWLER_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "dedup/filter.h"
#include "frontier/frontier.h"
#include "parsers/url.h"

namespace crawler::engine {

struct CrawlConfig {
  std::string user_agent = "crawler/0.1 (+https://example.org/crawler-contact)";
  uint32_t workers = 0;           // 0: one per core
  uint32_t max_connections = 64;  // concurrent transfers, all workers together
  uint32_t max_depth = 20;
  uint64_t max_pages = 0;                 // 0: no limit
  uint64_t max_pages_per_host = 100'000;  // trap guard
  // Trap guards on a URL's shape (engine/url_guards.h; 0: off): its length,
  // its path's segments, a run of segments repeated back to back, its query
  // parameters. Budgets per registered domain (engine/domain_budgets.h):
  // pages and URLs queued for every domain (0: no limit); a domain no seed
  // is on gets domain_budget pages, plus domain_budget_per_linker for each
  // other domain linking to it, at most domain_budget_max (domain_budget
  // 0: no such budget).
  uint32_t max_url_length = 2083;
  uint32_t max_path_segments = 20;
  uint32_t max_repeated_segments = 2;
  uint32_t max_query_params = 32;
  uint64_t max_pages_per_domain = 0;
  uint64_t max_urls_per_domain = 0;
  uint64_t domain_budget = 100;
  uint64_t domain_budget_per_linker = 100;
  uint64_t domain_budget_max = 10'000;
  std::vector<std::string> scope_hosts;    // empty: the seeds' hosts
  std::vector<std::string> scope_domains;  // a host matches if it ends in one
  std::vector<std::string> include;        // regexes; empty: everything in scope
  std::vector<std::string> exclude;        // regexes
  bool include_assets = false;             // also fetch page requisites (parsers/links.h)
  // Where a page requisite may be (engine/scope.h): "site" (also any host of
  // the loading page's site, by the public suffix list), "any" or "scope".
  std::string requisites_scope = "site";
  // Sitemaps: "off", "robots" (robots.txt Sitemap: lines) or
  // "robots+default" (also /sitemap.xml of every host). Their pages enter at
  // depth 1; sitemap indexes nest at most sitemap_max_depth levels.
  std::string sitemaps = "robots";
  uint32_t sitemap_max_depth = 2;
  // The crawl stops after this many seconds of crawling in this run, as on
  // Ctrl-C (resumable); 0: no limit. A continuous crawl ([recrawl]) runs
  // until stopped, so this, max_pages or a signal ends it.
  double max_duration_s = 0;
};

struct FetchConfig {
  double connect_timeout_s = 10;
  double timeout_s = 60;
  uint64_t low_speed_bytes = 1000;  // abort below this many bytes/s ...
  double low_speed_time_s = 30;     // ... for this long
  uint64_t max_body_bytes = 10 * 1024 * 1024;
  uint64_t spool_body_bytes = 256 * 1024;  // past this a body goes to a file (OUT/spool/)
  uint32_t max_redirects = 5;
  double robots_cache_s = 86400;
  std::vector<std::string> resolve;  // "HOST:PORT:ADDRESS", as curl --resolve
  // The crawler's DNS (crawler/resolver.h): its servers ("ADDRESS[:PORT]";
  // empty: /etc/resolv.conf's), the bounds on an answer's TTL, how long a
  // name that does not exist is remembered, and each lookup's first try's
  // timeout (two tries, the second twice as long).
  std::vector<std::string> dns_servers;
  double dns_min_ttl_s = 60;
  double dns_max_ttl_s = 21600;
  double dns_negative_ttl_s = 300;
  double dns_timeout_s = 2;
  std::string ipv6 = "auto";  // auto | on | off (crawler/resolver.h, Ipv6)
  std::string ca_file;        // PEM CA certificates to trust; empty: the system's
  bool insecure = false;      // no TLS certificate checks (logged loudly)
  std::string proxy;          // http://, https://, socks5[h]://HOST:PORT; empty: none
  // Transient failures (connect errors, timeouts, resets, failed DNS
  // lookups, 5xx, 429, 421, 408) are
  // fetched again up to max_retries times, after retry_base_s x 2^attempt
  // (x 0.5..1.5 jitter), or the server's Retry-After, at most retry_max_s.
  uint32_t max_retries = 3;
  double retry_base_s = 1;
  double retry_max_s = 60;
  // A lookup that fails (SERVFAIL, REFUSED, no answer) while the resolver
  // answers no lookup at all (an outage: Resolver::Healthy) defers its
  // host's robots.txt and pages instead of spending their retries: they
  // are fetched again with the same back-off (at least 1 s) for as long as
  // the back-offs add up to less than dns_retry_s, and only then given up.
  // A name that fails alone spends retries. 0: never deferred.
  double dns_retry_s = 300;
};

struct OutputConfig {
  uint64_t warc_rotate_bytes = uint64_t{1} << 30;
  std::string warc_prefix = "crawl";
  int warc_gzip_level = 6;  // libdeflate level (1..12) of each record's gzip member
  bool cdxj = true;         // a CDXJ index beside each WARC file (crawler/warc.h)
};

struct CheckpointConfig {
  double interval_s = 300;
  uint64_t interval_pages = 0;  // 0: by time only
  // Ctrl-C, SIGTERM, crawl.max_duration_s: no new request starts, the
  // transfers in flight finish and are parsed for at most this long, then
  // the last checkpoint is cut (what is still in flight then is asked again
  // after --resume). A second signal stops at once. 0: at once.
  double stop_grace_s = 10;
};

// [cluster]: a crawl shared by several nodes through Redis (crawler/src/cluster.h).
struct ClusterConfig {
  std::string redis;          // "redis://[:PASSWORD@]HOST:PORT"; empty: single machine
  std::string job = "crawl";  // nodes with the same job share one crawl
  std::string node;           // this node's name, stable across restarts
  uint32_t shards = 256;      // fixed when the job is created
  uint32_t min_nodes = 1;     // the job starts when this many nodes have joined
  uint32_t batch_urls = 256;  // URLs per stream entry at most ...
  uint32_t batch_ms = 20;     // ... or this long, whichever comes first
  double heartbeat_s = 2;     // a node is dead after 3 heartbeats without one
  // Each owned shard's lease (fencing): renewed at every heartbeat, lost
  // after this long without a renewal. At least 3 heartbeats.
  double lease_s = 15;
  // Backpressure: a shard's stream entries its owner has not read yet; at
  // this many, this node keeps further batches for that shard ...
  uint32_t max_lag_batches = 1000;
  // ... in RAM up to this many URLs (all shards, and while Redis is down),
  // then on disk in OUT/cluster-outbox/.
  uint64_t outbox_ram_urls = 1000000;
  // A directory every node can read (NFS or similar; a local one in tests),
  // holding each node's --out: the shards of a node that died or left are
  // then taken over by the others from its last committed checkpoint. Empty:
  // they wait for it to come back.
  std::string shared_dir;
  // Work-aware placement (with shared_dir): a node with a backlog of queued
  // URLs hands some of its busiest shards to a node that ran out of work.
  bool balance = true;
  // A job created by this node places its shards by their seed hosts
  // (bounded loads: no node gets more than 1.05x its share of the seeds'
  // hosts); false: by rendezvous hashing alone. The creator's choice is the
  // job's (it is kept in Redis with the job).
  bool place_by_seeds = true;
  // Politeness per address over the whole job: every request at an address
  // takes a turn from Redis, so hosts on one address held by different
  // nodes keep frontier.min_delay_ip_s and max_connections_per_ip together
  // (cluster/address_tokens.h: two round trips a request). false: each
  // node is polite per address on its own.
  bool ip_politeness = true;
  // A turn's question to Redis (its connect too) unanswered this long and
  // the node takes its turns alone until Redis answers again (counted as
  // address_turns_local, logged). A Redis whose AOF fsync stalls on a busy
  // disk can take seconds: a larger value waits that out.
  double turn_timeout_s = 2.0;
  // Redis behind Sentinel (cluster.redis then empty): the sentinels'
  // "HOST:PORT"s and the name of the primary they watch. A node asks them
  // for the primary at every (re)connect, so it follows a failover without
  // a restart.
  std::vector<std::string> sentinels;
  std::string sentinel_master;
  // Writes count once this many replicas have them too: every pipeline
  // that writes ends with WAIT wait_replicas wait_timeout_ms; fewer copies
  // in time and its writes count as not made, like those of a connection
  // lost before its replies came. 0: once the primary has them.
  uint32_t wait_replicas = 0;
  uint32_t wait_timeout_ms = 1000;
  // A cluster crawl: a Redis or sentinels are named.
  bool enabled() const { return !redis.empty() || !sentinels.empty(); }
};

// [recrawl]: continuous crawling (docs/recrawl.md). Every URL fetched is kept
// in the URL history (OUT/history/) and fetched again when due, with
// If-None-Match / If-Modified-Since; an unchanged page is written as a WARC
// revisit record. The crawl then runs until stopped.
struct RecrawlConfig {
  bool enabled = false;
  double interval_s = 86400;             // a URL's first revisit, after its fetch
  double min_interval_s = 3600;          // bounds of the adapted interval
  double max_interval_s = 30 * 86400.0;  //
  // How a URL's interval follows what its revisits find: "fixed" (always
  // interval_s: periodic cycles), "adaptive" (Nutch's and StormCrawler's
  // rule: x (1 + inc_rate) when unchanged, x (1 - dec_rate) when changed)
  // or "change-rate" (each page's change rate estimated, the intervals that
  // maximize freshness at one revisit per interval_s per URL on average;
  // engine/recrawl.h).
  std::string adapt = "fixed";
  // change-rate: what a second of age (how long an archived copy has been
  // stale) costs against freshness, in units of 1 / interval_s. 0 maximizes
  // freshness alone, which leaves the pages that change too fast for the
  // budget at max_interval_s; above 0 they are visited more, for a little
  // freshness (docs/recrawl.md).
  double age_weight = 0;
  double inc_rate = 0.4;
  double dec_rate = 0.2;
  bool conditional = true;  // send If-None-Match / If-Modified-Since
  // A URL answering 404 or 410 on this many visits in a row leaves the
  // history (and the filter, if it can erase): 0 keeps it.
  uint32_t forget_gone_after = 3;
};

// [metrics]: Prometheus metrics (crawler/src/metrics.h).
struct MetricsConfig {
  std::string listen;  // "HOST:PORT" serves GET /metrics there; empty: off
};

// [browser]: pages rendered in headless Chromium (docs/rendering.md).
struct BrowserConfig {
  // "off": nothing of the browser starts; "always": every HTML page the
  // crawl fetched with a 200 (and matched by include, not by exclude) is
  // rendered too: its links read after it ran, every request it made
  // archived; "auto": such a page only where its static parse says a
  // browser would find more, learnt per host (engine/render_choice.h).
  std::string render = "off";
  std::vector<std::string> include;   // regexes; empty: every page
  std::vector<std::string> exclude;   // regexes
  uint32_t processes = 1;             // Chromium processes, a page at a time each
  uint32_t restart_pages = 100;       // a browser restarted after this many pages
  double page_timeout_s = 30;         // the cap on one page, behaviors included
  uint32_t idle_ms = 500;             // network idle: no request in flight this long
  uint32_t scroll_steps = 20;         // behaviors: scrolls of a window, at most
  std::string chromium = "chromium";  // the browser: a path, or a name in PATH
};

struct Config {
  CrawlConfig crawl;
  FetchConfig fetch;
  frontier::FrontierOptions frontier;  // spill_dir is set by the engine
  dedup::FilterOptions dedup;
  std::string dedup_type_name = "bloom";  // as written; dedup.type is derived from it
  // dedup.compact_growth: the filter's hash log is OUT/dedup/; a stripe is
  // rebuilt as one layer of this x its keys when it fills (0: never).
  double dedup_compact_growth = 1.25;
  // dedup.payload: a 200 whose payload was archived already, under any URL,
  // is written as an identical-payload-digest revisit of that first capture
  // (output/history.h keeps the digests), if the payload has at least
  // dedup.payload_min_bytes (a smaller one is stored whole: its revisit
  // record would not be smaller; docs/formats.md).
  bool dedup_payload = false;
  uint64_t dedup_payload_min_bytes = 512;
  // dedup.from: earlier crawls' indexes (an OUT directory, a .wacz, a .cdxj;
  // archive/earlier.h) whose captures a new crawl's payloads are revisits
  // of. Read when a crawl starts (not on --resume: its checkpoint has them).
  std::vector<std::string> dedup_from;
  parsers::UrlOptions url;
  OutputConfig output;
  CheckpointConfig checkpoint;
  ClusterConfig cluster;
  MetricsConfig metrics;
  RecrawlConfig recrawl;
  BrowserConfig browser;
};

// Defaults, then `path` (if not empty), then each "section.key=value" of
// `overrides` in order. The value of an override is read as TOML, or as a
// string when it is not valid TOML (so --set dedup.type=cuckoo works).
Result<Config> LoadConfig(const std::string& path,
                          const std::vector<std::string>& overrides = {});

// The effective configuration as TOML (for the checkpoint manifest and --help).
std::string ConfigToToml(const Config& config);

// Every "section.key" of `sections` with its value as TOML, in schema order
// (a cluster job stores its nodes' [crawl], [url] and [dedup] this way).
std::vector<std::pair<std::string, std::string>> ConfigEntries(
    const Config& config, const std::vector<std::string>& sections);

}  // namespace crawler::engine

#endif  // CRAWLER_CONFIG_H_
