// Which failed fetches are tried again, and when (fetch.max_retries,
// retry_base_s, retry_max_s). Pure functions; the worker applies them and
// the frontier schedules the retry (frontier::Frontier::Retry).
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
// refused or reset, timed out or broke mid-response; or a 5xx, 429 or 408.
// DNS failures, 4xx and truncated bodies are final.
bool Transient(const FetchResult& r);

// What a fetch says about its host, for the frontier's host back-off and
// parking: 429/503 overloaded; any other response answered; no connection
// (refused, unreachable) unreachable; anything else (a timeout, DNS, a
// response cut mid-way) nothing: a slow or flaky server is not parked, its
// URLs back off one by one. Overloaded and unreachable also hold the whole
// host for a retry's back-off, not only the URL.
frontier::HostSignal SignalOf(const FetchResult& r);

// Retry-After of a response head (its last value, if several): delay
// seconds, or an HTTP-date (RFC 9110 10.2.3) as seconds after `now`
// (0 if past). nullopt: absent or unreadable.
std::optional<double> RetryAfterSeconds(std::string_view response_head, std::time_t now);

// Seconds before attempt `attempt` + 1 (attempt 0 failed first): base x
// 2^attempt x (0.5 + jitter) with jitter in [0, 1), at least Retry-After if
// given, at most `cap`.
double BackoffSeconds(uint32_t attempt, double base, double cap, double jitter,
                      std::optional<double> retry_after);

}  // namespace crawler::engine

#endif  // CRAWLER_RETRY_H_
