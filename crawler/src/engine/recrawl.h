// What one visit of a URL does to its history record when the crawl
// revisits ([recrawl], docs/recrawl.md): the pure rules, without I/O, so
// each is unit-tested alone. The worker applies them (revisits.h).
//
//   before a fetch   ConditionalHeaders: If-None-Match (its ETag) and
//                    If-Modified-Since (its Last-Modified) from the record;
//   the response     RevisitFor: a 304 to a URL with an earlier capture is a
//                    server-not-modified revisit record, a 200 whose payload
//                    digest is the earlier capture's an identical-payload-
//                    digest one (WARC/1.1 6.7); anything else a full record;
//   after it         NextRecord: the new validators and capture, the visit
//                    counted (changed, unchanged), the interval adapted and
//                    the next due time, always after the visit (an interval
//                    of at least 1 ms, whatever the estimate or the
//                    bounds: Nutch's NUTCH-1564); ShouldForget: gone (404/410) on
//                    recrawl.forget_gone_after visits in a row.
//
// The interval, within [min_interval_s, max_interval_s]:
//   "adaptive"     Nutch's AdaptiveFetchSchedule and StormCrawler's rule:
//                  x (1 + inc_rate) after an unchanged visit, x (1 -
//                  dec_rate) after a changed one, kept for anything else
//                  (an error, a redirect);
//   "fixed"        interval_s always (periodic cycles);
//   "change-rate"  each page's change rate estimated from its visits
//                  (EstimatedRate, Cho and Garcia-Molina 2003), and the
//                  interval that maximizes the crawl's freshness (less
//                  age_weight x its age, BestInterval) for the
//                  fetches it can afford (OptimalInterval): the Lagrange
//                  solution of Cho and Garcia-Molina 2000, whose price `mu`
//                  the crawl tunes so that the history's revisits per
//                  second match one per interval_s per URL (RecrawlMu).
#ifndef CRAWLER_SRC_ENGINE_RECRAWL_H_
#define CRAWLER_SRC_ENGINE_RECRAWL_H_

#include <chrono>
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

// Unix milliseconds of `t` (the history's clock).
inline uint64_t UnixMs(std::chrono::system_clock::time_point t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch())
          .count());
}
inline uint64_t UnixMs() { return UnixMs(std::chrono::system_clock::now()); }

// "If-None-Match: ..." and "If-Modified-Since: ..." lines for `r` (none for
// a validator the server did not send).
std::vector<std::string> ConditionalHeaders(const output::HistoryRecord& r);

// The revisit record a response is written as, if any. `before`: the URL's
// record (null for a first fetch); `digest`: the response's payload digest
// ("sha1:BASE32"; only read for a 200).
std::optional<output::Revisit> RevisitFor(const output::HistoryRecord* before,
                                          long status, std::string_view digest);

// What a visit adds to the record.
struct VisitFacts {
  uint64_t now_ms = 0;
  long status = 0;  // 0: no response
  VisitKind kind = VisitKind::kOther;
  std::string_view etag, last_modified;  // the response's validators ("": none)
  std::string_view date;                 // its Date header ("": none)
  // A full capture to refer to: this response, or the capture it is an
  // identical-payload revisit of. Its record id ("" for an earlier crawl's
  // capture, whose index names none: revisits then name it by URI and date).
  bool capture = false;
  std::string_view record_id, payload_digest, uri;
  std::string_view content_type;  // the response's Content-Type header ("": none)
  uint64_t capture_ms = 0;        // its WARC-Date (Unix ms; 0: now_ms)
  uint64_t bytes = 0;             // its payload bytes
  uint32_t depth = 0;
  uint8_t url_kind = 0;
};

// The kind of a visit: `before` (null: first), the status and whether a
// revisit record was written for it.
VisitKind KindOf(const output::HistoryRecord* before, long status,
                 const std::optional<output::Revisit>& revisit);

// `mu`: "change-rate"'s price (RecrawlMu; unused by the other rules).
output::HistoryRecord NextRecord(const output::HistoryRecord* before, const VisitFacts& f,
                                 const RecrawlConfig& config, double mu = 0);

// A page's change rate (changes per second) from `r`'s visits, 0 before
// any comparison (n = 0); with no change seen, half a change over the time
// observed. When the server dated every change found (r.dated ==
// r.changed: a Last-Modified later than the one before), the maximum-
// likelihood estimate of a Poisson process seen over r.exposure_ms: X /
// exposure. A visit that finds no change saw the whole gap without one; one
// that finds a change dated L saw a change at L and none from L to the
// visit, and nothing of the time before L. Otherwise Cho and Garcia-
// Molina's estimator for n visits at a mean interval I = observed / n of
// which X found a change, -ln((n - X + 0.5) / (n + 0.5)) / I, which knows
// no more than "changed or not" and so cannot tell a page that changes
// once per visit from one that changes a hundred times.
double EstimatedRate(const output::HistoryRecord& r);
// Unix ms of an HTTP-date ("Sun, 06 Nov 1994 08:49:37 GMT" and the other
// two forms RFC 9110 allows); nullopt for anything else.
std::optional<uint64_t> HttpDateMs(std::string_view text);
// The interval (s) that maximizes the mean freshness of pages changing at
// `rate` under the price `mu` (s): x = rate x interval solves
// 1 - (1 + x) e^-x = mu x rate; a page with mu x rate >= 1 changes too often
// to be kept fresh at this budget: +infinity (the caller's max_interval_s).
double OptimalInterval(double rate, double mu);
// The interval within [min_s, max_s] that maximizes a page's freshness less
// `nu` x its mean age (s) less mu x its visit frequency: with nu = 0 the
// clamped OptimalInterval; with nu > 0 a page that changes too fast to be
// kept fresh still gets visits, as many as its age is worth. For a page of
// rate l visited every I s, freshness is (1 - e^-lI) / lI and age
// I/2 - 1/l + (1 - e^-lI) / (l^2 I) (Cho and Garcia-Molina 2003).
double BestInterval(double rate, double mu, double nu, double min_s, double max_s);
// The first price: a page changing once per interval_s gets interval_s.
double InitialMu(const RecrawlConfig& config);
// The next price, from the history's revisit demand (revisits per second
// its intervals ask for) against the budget (URLs / interval_s): a crawl
// that asks for more raises the price (longer intervals), and lowers it
// when it asks for less; damped, at most x2 or x0.5 a step.
double NextMu(double mu, double demand_per_s, uint64_t urls, const RecrawlConfig& config);

// The interval bucket a record counts in (CrawlCounts::revisit_intervals):
// "2^KK", the smallest power of two seconds at or above it (KK 00..25).
std::string IntervalBucket(uint64_t interval_ms);

// A record's share of the revisit demand: 10^9 / interval_ms micro-hertz.
uint64_t DemandMicroHertz(uint64_t interval_ms);

// The record's URL has been gone long enough to leave the history.
bool ShouldForget(const output::HistoryRecord& r, const RecrawlConfig& config);

}  // namespace crawler::engine

#endif  // CRAWLER_SRC_ENGINE_RECRAWL_H_
