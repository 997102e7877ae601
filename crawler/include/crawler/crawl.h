// One crawl: seeds -> normalize -> scope -> dedup -> frontier -> fetch ->
// WARC + fetch log -> links -> scope -> dedup -> frontier ...
//
// This first version drives one libcurl multi Fetcher from one thread (many
// transfers at once); parsing happens on that thread too. Per host, robots.txt
// is fetched first (RFC 9309 outcomes via parsers::Robots::ForFetch) and the
// host's URLs are handed out only after it. Redirects are not followed inside
// libcurl: each Location is resolved and goes through scope and dedup like a
// link, and the hop is logged. Every URL the crawl admits ends in exactly one
// fetch-log line: fetched (with its status or error), or skipped with the
// reason (robots, max_pages_per_host). Output:
//   OUT/warc/crawl-NNNNN.warc.gz   OUT/fetch-log.jsonl   OUT/frontier/ (spill)
//
// Not yet: several worker threads, checkpoints and resume, the live status
// line and the stats report (see the open issues).
#ifndef CRAWLER_CRAWL_H_
#define CRAWLER_CRAWL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "crawler/config.h"
#include "dedup/status.h"

namespace crawler::engine {

struct CrawlSummary {
  uint64_t fetched = 0;          // responses received (any status)
  uint64_t failed = 0;           // no response: timeouts, refused, broken
  uint64_t truncated = 0;
  uint64_t status_2xx = 0, status_3xx = 0, status_4xx = 0, status_5xx = 0;
  uint64_t robots_blocked = 0;
  uint64_t out_of_scope = 0;     // links and redirect targets left out
  uint64_t too_deep = 0;
  uint64_t trap_guard = 0;       // max_pages_per_host reached
  uint64_t duplicates = 0;       // links the dedup filter had seen
  uint64_t bytes = 0;            // body bytes received
  double seconds = 0;
  bool stopped = false;          // ended by the stop flag or max_pages
  std::string warc_dir, fetch_log;
};

class Crawl {
 public:
  // `seeds`: normalized URLs. Creates OUT (and its files).
  static Result<std::unique_ptr<Crawl>> Create(const Config& config,
                                               const std::vector<std::string>& seeds,
                                               const std::string& out_dir);
  ~Crawl();
  Crawl(const Crawl&) = delete;
  Crawl& operator=(const Crawl&) = delete;

  // Runs until the frontier is empty, max_pages is reached or *stop is set
  // (in-flight transfers are then abandoned). Errors: output I/O failures.
  Result<CrawlSummary> Run(const std::atomic<bool>& stop);

 private:
  struct Impl;
  explicit Crawl(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace crawler::engine

#endif  // CRAWLER_CRAWL_H_
