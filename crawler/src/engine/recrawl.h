// What one visit of a URL does to its history record when the crawl
// revisits ([recrawl], docs/recrawl.md): the pure rules, without I/O, so
// each is unit-tested alone. The worker applies them (worker_history.cc).
//
//   before a fetch   ConditionalHeaders: If-None-Match (its ETag) and
//                    If-Modified-Since (its Last-Modified) from the record;
//   the response     RevisitFor: a 304 to a URL with an earlier capture is a
//                    server-not-modified revisit record, a 200 whose payload
//                    digest is the earlier capture's an identical-payload-
//                    digest one (WARC/1.1 6.7); anything else a full record;
//   after it         NextRecord: the new validators and capture, the visit
//                    counted (changed, unchanged), the interval adapted and
//                    the next due time; ShouldForget: gone (404/410) on
//                    recrawl.forget_gone_after visits in a row.
//
// The interval ("adaptive", Nutch's AdaptiveFetchSchedule and
// StormCrawler's rule): x (1 + inc_rate) after an unchanged visit, x (1 -
// dec_rate) after a changed one, kept for anything else (an error, a
// redirect), within [min_interval_s, max_interval_s]. "fixed": interval_s
// always (periodic cycles).
#ifndef CRAWLER_SRC_ENGINE_RECRAWL_H_
#define CRAWLER_SRC_ENGINE_RECRAWL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "crawler/config.h"
#include "crawler/warc.h"
#include "output/history.h"

namespace crawler::engine {

// How a visit of a URL came out, as the history counts it.
enum class VisitKind {
  kFirst,        // no record before: the URL's first fetch
  kNotModified,  // 304 to a conditional request
  kIdentical,    // 200 whose payload digest is the earlier capture's
  kChanged,      // 200 with another payload
  kOther,        // any other answer (an error, a redirect, 404) or none
};

// "If-None-Match: ..." and "If-Modified-Since: ..." lines for `r` (none for
// a validator the server did not send).
std::vector<std::string> ConditionalHeaders(const HistoryRecord& r);

// The value of header `name` (case-insensitive) in a response head ("" if
// absent; the last one if repeated).
std::string HeaderValue(std::string_view head, std::string_view name);

// The revisit record a response is written as, if any. `before`: the URL's
// record (null for a first fetch); `digest`: the response's payload digest
// ("sha1:BASE32"; only read for a 200).
std::optional<Revisit> RevisitFor(const HistoryRecord* before, long status,
                                  std::string_view digest);

// What a visit adds to the record.
struct VisitFacts {
  uint64_t now_ms = 0;
  long status = 0;  // 0: no response
  VisitKind kind = VisitKind::kOther;
  std::string_view response_head;  // its ETag and Last-Modified are kept
  // The response record written, when it was a full capture.
  std::string_view record_id, payload_digest, uri;
  uint64_t capture_ms = 0;  // its WARC-Date (Unix ms; 0: now_ms)
  uint64_t bytes = 0;       // its payload bytes
  uint32_t depth = 0;
  uint8_t url_kind = 0;
};

// The kind of a visit: `before` (null: first), the status and whether a
// revisit record was written for it.
VisitKind KindOf(const HistoryRecord* before, long status,
                 const std::optional<Revisit>& revisit);

HistoryRecord NextRecord(const HistoryRecord* before, const VisitFacts& f,
                         const RecrawlConfig& config);

// The interval bucket a record counts in (CrawlCounts::revisit_intervals):
// "2^KK", the smallest power of two seconds at or above it (KK 00..25).
std::string IntervalBucket(uint64_t interval_ms);

// The record's URL has been gone long enough to leave the history.
bool ShouldForget(const HistoryRecord& r, const RecrawlConfig& config);

}  // namespace crawler::engine

#endif  // CRAWLER_SRC_ENGINE_RECRAWL_H_
