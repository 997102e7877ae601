// See retry.h.
#include "engine/retry.h"

#include <curl/curl.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "base/ascii.h"

namespace crawler::engine {

bool Transient(const FetchResult& r) {
  if (r.error == FetchError::kSpool) return true;  // whatever the server answered
  if (r.status == 0) {
    return r.error == FetchError::kConnect || r.error == FetchError::kTimeout ||
           r.error == FetchError::kProtocol || r.error == FetchError::kDnsFailure ||
           r.error == FetchError::kSpool;
  }
  // A response cut mid-body (reset, closed short of its Content-Length, a
  // broken compressed stream, a timeout): its body is not the page's.
  if (BodyCut(r)) return true;
  // 421 Misdirected Request: the address no longer serves the host (a move
  // the DNS cache had not seen yet; the fetcher forgets that address).
  return r.status == 408 || r.status == 421 || r.status == 429 ||
         (r.status >= 500 && r.status <= 599);
}

bool BodyCut(const FetchResult& r) {
  return r.status > 0 &&
         (r.error == FetchError::kProtocol || r.error == FetchError::kTimeout);
}

std::string_view TruncatedReason(const FetchResult& r) {
  if (r.truncated) return "length";
  if (!BodyCut(r)) return {};
  return r.error == FetchError::kTimeout ? "time" : "disconnect";
}

frontier::HostSignal SignalOf(const FetchResult& r) {
  using frontier::HostSignal;
  if (r.status == 429 || r.status == 503) return HostSignal::kOverloaded;
  if (r.status > 0) return HostSignal::kAnswered;
  if (r.error == FetchError::kConnect) return HostSignal::kUnreachable;
  if (r.error == FetchError::kDnsFailure) return HostSignal::kUnresolved;
  return HostSignal::kNone;
}

std::optional<double> RetryAfterSeconds(std::string_view value, std::time_t now) {
  value = ascii::Trim(value);
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(), [](char c) { return ascii::IsDigit(c); }))
    return value.size() > 9 ? 1e9 : std::stod(std::string(value));
  // An HTTP-date: libcurl's parser (RFC 1123, 850 and asctime forms).
  std::time_t t = curl_getdate(std::string(value).c_str(), nullptr);
  if (t == -1) return std::nullopt;
  return std::max(0.0, std::difftime(t, now));
}

double BackoffSeconds(uint32_t attempt, double base, double cap, double jitter,
                      std::optional<double> retry_after) {
  double s = base * std::ldexp(1.0, static_cast<int>(std::min<uint32_t>(attempt, 30))) *
             (0.5 + jitter);
  if (retry_after) s = std::max(s, *retry_after);
  return std::min(s, cap);
}

bool DnsDefers(uint32_t attempts, const RetryPolicy& policy) {
  if (policy.dns_retry_s <= 0) return false;
  double waited = 0;
  for (uint32_t i = 0; i < attempts && waited < policy.dns_retry_s; ++i)
    waited += std::max(
        1.0, std::min(policy.max_s,
                      policy.base_s *
                          std::ldexp(1.0, static_cast<int>(std::min<uint32_t>(i, 30)))));
  return waited < policy.dns_retry_s;
}

Verdict Classify(const FetchResult& r, uint32_t attempt, const RetryPolicy& policy,
                 double jitter, std::time_t now) {
  Verdict v;
  if (r.other_address) {  // the next address of the host, now
    v.final = false;
    return v;
  }
  v.signal = SignalOf(r);
  if (!Transient(r)) return v;
  const bool deferred =
      r.error == FetchError::kDnsFailure && r.dns_outage && DnsDefers(attempt, policy);
  if (attempt >= policy.max_retries && !deferred) {
    v.gave_up = true;
    return v;
  }
  v.final = false;
  v.wait_s = BackoffSeconds(attempt, policy.base_s, policy.max_s, jitter,
                            RetryAfterSeconds(r.retry_after, now));
  if (deferred) v.wait_s = std::max(1.0, v.wait_s);
  return v;
}

}  // namespace crawler::engine
