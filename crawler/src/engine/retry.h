// Which failed fetches are tried again, and when (fetch.max_retries,
// retry_base_s, retry_max_s): a finished page fetch is classified once
// (Classify), then the worker records it and schedules what the verdict
// says (frontier::Frontier::Done or Retry). Pure functions.
#ifndef CRAWLER_RETRY_H_
#define CRAWLER_RETRY_H_

#include <cstdint>
#include <ctime>
#include <optional>
#include <string_view>

#include "crawler/fetcher.h"
#include "frontier/frontier.h"

namespace crawler::engine {

// A failure worth another attempt: no response because the connection was
// refused or reset, timed out or broke mid-response; a DNS lookup that
// failed (SERVFAIL, no answer); a response whose body broke off
// (BodyCut); a spool file that could not be written (a full or read-only
// spool directory: fetched again later); or a 5xx, 429, 421 or 408. A
// name that does not exist (NXDOMAIN), other 4xx and bodies cut at
// fetch.max_body_bytes are final.
bool Transient(const FetchResult& r);

// A response whose body broke off: headers came, then the connection was
// reset or closed short of its Content-Length, its compressed stream
// broke, or it timed out. Its body is a piece of the page: fetched again.
bool BodyCut(const FetchResult& r);

// The WARC-Truncated value for `r`'s record: "length" (max_body_bytes),
// "disconnect" or "time" (BodyCut), empty for a whole body.
std::string_view TruncatedReason(const FetchResult& r);

// What a fetch says about its host, for the frontier's host back-off and
// parking: 429/503 overloaded; any other response answered; no connection
// (refused, unreachable) unreachable; a failed lookup unresolved; anything
// else (a timeout, NXDOMAIN, a response cut mid-way) nothing: a slow or
// flaky server is not parked, its URLs back off one by one. Overloaded,
// unreachable and unresolved also hold the whole host for a retry's
// back-off, not only the URL.
frontier::HostSignal SignalOf(const FetchResult& r);

// A Retry-After value (FetchResult::retry_after): delay seconds, or an
// HTTP-date (RFC 9110 10.2.3) as seconds after `now` (0 if past).
// nullopt: absent or unreadable.
std::optional<double> RetryAfterSeconds(std::string_view value, std::time_t now);

// Seconds before attempt `attempt` + 1 (attempt 0 failed first): base x
// 2^attempt x (0.5 + jitter) with jitter in [0, 1), at least Retry-After if
// given, at most `cap`.
double BackoffSeconds(uint32_t attempt, double base, double cap, double jitter,
                      std::optional<double> retry_after);

struct RetryPolicy {
  uint32_t max_retries = 3;  // fetch.max_retries
  double base_s = 1;         // fetch.retry_base_s
  double max_s = 60;         // fetch.retry_max_s
  double dns_retry_s = 300;  // fetch.dns_retry_s
};

// Whether a failed lookup (FetchError::kDnsFailure) after `attempts`
// earlier failed attempts still defers rather than gives up: the back-offs
// so far, each taken as at least 1 s and without jitter (sum of
// max(1, min(max_s, base_s x 2^i)) for i < attempts), are under
// dns_retry_s. A resolver outage of a minute spends no retries.
bool DnsDefers(uint32_t attempts, const RetryPolicy& policy);

// What becomes of one finished page fetch, with the reason.
struct Verdict {
  bool final = true;     // false: fetched again after wait_s
  bool gave_up = false;  // final although transient: its last allowed attempt
  double wait_s = 0;     // a retry's back-off (at least Retry-After, at most max_s)
  frontier::HostSignal signal = frontier::HostSignal::kNone;  // SignalOf(r)
};

// `attempt`: attempts before this one (UrlEntry::attempt); `jitter` in [0, 1).
// A fetch whose address did not connect while its host has another
// (FetchResult::other_address) is fetched again at once, not counted
// against the host; a failed lookup in a resolver outage
// (FetchResult::dns_outage) defers while DnsDefers, each wait at least 1 s,
// whatever max_retries says.
Verdict Classify(const FetchResult& r, uint32_t attempt, const RetryPolicy& policy,
                 double jitter, std::time_t now);

}  // namespace crawler::engine

#endif  // CRAWLER_RETRY_H_
