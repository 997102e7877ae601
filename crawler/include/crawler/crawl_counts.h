// The crawl's figures as plain data: what the engine counts, what a
// checkpoint's manifest and stats.json carry, and the live progress view.
// Owned here, below the rooms that write them (report/, checkpoint/) and the
// crawl that assembles them (crawler/crawl.h), so that every arrow between
// those rooms points down to this header.
#ifndef CRAWLER_CRAWL_COUNTS_H_
#define CRAWLER_CRAWL_COUNTS_H_

#include <cstdint>
#include <map>
#include <string>

#include "frontier/frontier.h"

namespace crawler::engine {

// The crawl's counts, as checkpointed (MANIFEST.json "counters") and
// reported (stats.json "crawl"); their JSON schema is crawler/src/stats_schema.h.
struct CrawlCounts {
  uint64_t fetched = 0;  // responses received (any status)
  uint64_t failed = 0;   // no response: timeouts, refused, broken
  uint64_t truncated = 0;
  uint64_t status_2xx = 0, status_3xx = 0, status_4xx = 0, status_5xx = 0;
  uint64_t robots_blocked = 0;
  uint64_t unresolved = 0;    // pages of hosts whose name did not resolve (DNS)
  uint64_t out_of_scope = 0;  // links and redirect targets left out
  uint64_t too_deep = 0;
  uint64_t trap_guard = 0;          // max_pages_per_host reached
  uint64_t duplicates = 0;          // links the dedup filter had seen
  uint64_t filter_full = 0;         // links refused: a fixed-size filter was full
  uint64_t too_many_redirects = 0;  // redirect targets past fetch.max_redirects
  uint64_t bytes = 0;               // body bytes received
  uint64_t bytes_2xx = 0, bytes_3xx = 0, bytes_4xx = 0, bytes_5xx = 0;  // of those
  uint64_t spilled = 0;  // URLs the frontier wrote to disk (memory bound)
  uint64_t retries = 0;  // failed attempts fetched again (fetch.max_retries)
  uint64_t gave_up = 0;  // URLs whose last allowed attempt failed transiently too
  // Attempts whose lookup failed (a resolver outage), fetched again later
  // without spending a retry (fetch.dns_retry_s); robots.txt's included.
  uint64_t dns_deferred = 0;
  // Attempts whose address did not connect, fetched again at once at the
  // host's next address (Resolver::MarkDead); robots.txt's included.
  uint64_t other_address = 0;
  // [browser] render: pages rendered (read after they ran; at their cap
  // too), pages the browser gave up (recorded as fetched), and the
  // browser's responses archived with them (docs/rendering.md).
  uint64_t rendered = 0, render_failed = 0, render_resources = 0;
  // URLs given up, or cut by max_pages_per_host, erased from the dedup
  // filter (cuckoo or counting with dedup.allow_erase): a later link admits
  // them again. cannot_forget: such URLs a filter that cannot erase keeps.
  uint64_t forgotten = 0, cannot_forget = 0;
  // [recrawl]: revisits by outcome (engine/recrawl.h): answered 304, a 200
  // with the earlier capture's payload digest (both written as WARC revisit
  // records), a 200 with a new payload; the payload bytes not stored again
  // (each unchanged page's earlier capture's size); URLs that left the
  // history, gone (404/410) on recrawl.forget_gone_after visits in a row.
  uint64_t revisits_not_modified = 0, revisits_identical = 0, revisits_changed = 0;
  uint64_t revisit_bytes_saved = 0, history_forgotten = 0;
  // dedup.payload: 200s written as revisits of their payload's first capture
  // (at another URL, or an earlier version of their own), and their payload
  // bytes not stored again.
  uint64_t payload_revisits = 0, payload_bytes_saved = 0;
  // The URLs in the history by their revisit interval: key "2^KK" counts
  // those of at most 2^KK seconds (engine/recrawl.h, IntervalBucket).
  std::map<std::string, uint64_t> revisit_intervals;
  // The revisits per second the history's intervals ask for, in micro-hertz
  // (each URL's 10^9 / interval_ms, rounded): "change-rate"'s demand.
  uint64_t revisit_demand_uhz = 0;
  std::map<std::string, uint64_t> errors;  // by FetchErrorName: failures and truncations
  // URLs the trap guards and the domain budgets kept out, by reason:
  // url_length, path_segments, repeated_segments, query_params (links, at
  // admission), domain_urls (links past their domain's URL budget),
  // domain_pages (queued URLs popped past their domain's page budget).
  std::map<std::string, uint64_t> guarded;
  // Losses: URLs in scope the crawl ended without because no server
  // answered, by the kind of the failure that cost them (IsLoss in
  // crawler/fetcher.h: dns-failure, connect, timeout, spool): a page given up
  // after its last retry, or a page of a host whose robots.txt had no answer
  // after its retries (then skipped: `robots`, or `dns` for dns-failure).
  // Not losses: an answer (a 404, a 5xx or a malformed response given up:
  // the server's word, in the fetch log), NXDOMAIN (no such name),
  // robots.txt rules, budgets, guards.
  // A crawl that ends (not stopped) with any exits 3 (cli/main.cc).
  std::map<std::string, uint64_t> lost;
  // Hosts whose robots.txt had no answer after its retries, by kind: each
  // host's pages are then all in `lost`.
  std::map<std::string, uint64_t> lost_hosts;
};

struct CrawlSummary : CrawlCounts {
  double seconds = 0;
  bool stopped = false;  // ended by the stop flag or max_pages
  std::string warc_dir, fetch_log;
};

// The sum of a count by kind (CrawlCounts::errors, lost, ...).
inline uint64_t KindsTotal(const std::map<std::string, uint64_t>& counts) {
  uint64_t total = 0;
  for (const auto& [kind, n] : counts) total += n;
  return total;
}
// "connect 3, timeout 1" (each number as `number` writes it), or "none".
template <typename Number>
std::string KindsText(const std::map<std::string, uint64_t>& counts, Number number) {
  std::string text;
  for (const auto& [kind, n] : counts)
    text += (text.empty() ? "" : ", ") + kind + " " + number(n);
  return text.empty() ? "none" : text;
}

// Dedup figures a filter counts per process, carried across resumes in the
// checkpoint's manifest so the report covers the whole crawl.
struct DedupCarried {
  double expected_false_seen = 0;  // URLs wrongly called "seen" (expected)
  uint64_t compactions = 0;        // stripe rebuilds
  double compaction_s = 0;         // their time
};

// A live view for the status line and the log (cheap: O(stripes + hosts)).
struct CrawlProgress {
  CrawlSummary summary;
  frontier::FrontierStats frontier;
  uint64_t dedup_items = 0;
  double dedup_fpr = 0;
  uint64_t dedup_bytes = 0;
  std::string cluster;  // a cluster node's exchange, one phrase (else empty)
};

}  // namespace crawler::engine

#endif  // CRAWLER_CRAWL_COUNTS_H_
