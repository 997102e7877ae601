// crawler/src/engine/retry.h: which failures are retried, Retry-After, the
// back-off, and the one verdict a finished fetch gets.
#include "engine/retry.h"

#include <catch2/catch.hpp>

namespace crawler::engine {
namespace {

FetchResult With(long status, FetchError error = FetchError::kNone) {
  FetchResult r;
  r.status = status;
  r.error = error;
  return r;
}

TEST_CASE(
    "Transient failures: connect, timeout, reset, a failed lookup, 5xx, 429, 421, 408, "
    "a body cut mid-way; not NXDOMAIN, 4xx or a body over the size cap",
    "[engine][retry]") {
  CHECK(Transient(With(0, FetchError::kConnect)));
  CHECK(Transient(With(0, FetchError::kTimeout)));
  CHECK(Transient(With(0, FetchError::kProtocol)));
  CHECK_FALSE(Transient(With(0, FetchError::kDns)));
  CHECK(Transient(With(0, FetchError::kDnsFailure)));
  CHECK_FALSE(Transient(With(0, FetchError::kOther)));
  for (long s : {500L, 502L, 503L, 504L, 599L, 429L, 421L, 408L})
    CHECK(Transient(With(s)));
  for (long s : {200L, 301L, 404L, 403L, 410L}) CHECK_FALSE(Transient(With(s)));
  FetchResult big = With(200, FetchError::kTooLarge);
  big.truncated = true;
  CHECK_FALSE(Transient(big));
  CHECK(TruncatedReason(big) == "length");
  // Headers came, then the body broke off (reset, short of its
  // Content-Length, a broken gzip stream) or timed out: fetched again, its
  // record marked as cut. A 404 cut mid-way is fetched again as well.
  for (long s : {200L, 404L}) {
    CHECK(Transient(With(s, FetchError::kProtocol)));
    CHECK(Transient(With(s, FetchError::kTimeout)));
  }
  CHECK(TruncatedReason(With(200, FetchError::kProtocol)) == "disconnect");
  CHECK(TruncatedReason(With(200, FetchError::kTimeout)) == "time");
  CHECK(TruncatedReason(With(200)).empty());
  CHECK(TruncatedReason(With(0, FetchError::kProtocol)).empty());
  // Overload and unreachable hold the whole host; a lone 500 does not.
  using frontier::HostSignal;
  CHECK(SignalOf(With(429)) == HostSignal::kOverloaded);
  CHECK(SignalOf(With(503)) == HostSignal::kOverloaded);
  CHECK(SignalOf(With(0, FetchError::kConnect)) == HostSignal::kUnreachable);
  CHECK(SignalOf(With(0, FetchError::kTimeout)) == HostSignal::kNone);
  CHECK(SignalOf(With(500)) == HostSignal::kAnswered);
  CHECK(SignalOf(With(200)) == HostSignal::kAnswered);
  CHECK(SignalOf(With(0, FetchError::kProtocol)) == HostSignal::kNone);
  CHECK(SignalOf(With(0, FetchError::kDns)) == HostSignal::kNone);
}

TEST_CASE("RFC 9110 10.2.3: Retry-After as delay-seconds or an HTTP-date",
          "[engine][retry]") {
  const std::time_t now = 784111777;  // Sun, 06 Nov 1994 08:49:37 GMT
  CHECK(RetryAfterSeconds("120", now) == 120.0);
  CHECK(RetryAfterSeconds("  7 ", now) == 7.0);
  CHECK(RetryAfterSeconds("Sun, 06 Nov 1994 08:50:07 GMT", now) == 30.0);
  // A date in the past: at once.
  CHECK(RetryAfterSeconds("Sun, 06 Nov 1994 08:00:00 GMT", now) == 0.0);
  CHECK_FALSE(RetryAfterSeconds("soon", now));
  CHECK_FALSE(RetryAfterSeconds("", now));
  CHECK_FALSE(RetryAfterSeconds("-5", now));
}

TEST_CASE(
    "Back-off: base x 2^attempt x (0.5..1.5), at least Retry-After, at most the cap",
    "[engine][retry]") {
  CHECK(BackoffSeconds(0, 1, 60, 0.5, std::nullopt) == 1.0);
  CHECK(BackoffSeconds(1, 1, 60, 0.5, std::nullopt) == 2.0);
  CHECK(BackoffSeconds(3, 1, 60, 0.0, std::nullopt) == 4.0);   // 8 x 0.5
  CHECK(BackoffSeconds(3, 1, 60, 0.99, std::nullopt) < 12.0);  // 8 x 1.49
  CHECK(BackoffSeconds(10, 1, 60, 0.5, std::nullopt) == 60.0);
  CHECK(BackoffSeconds(1000, 1, 60, 0.5, std::nullopt) == 60.0);  // no overflow
  CHECK(BackoffSeconds(0, 1, 60, 0.5, 30.0) == 30.0);
  CHECK(BackoffSeconds(0, 1, 60, 0.5, 3600.0) == 60.0);  // Retry-After capped
}

TEST_CASE(
    "Classify: final, retried after its back-off, or given up; with the host's signal",
    "[engine][retry]") {
  const RetryPolicy policy{.max_retries = 2, .base_s = 1, .max_s = 60};
  using frontier::HostSignal;
  Verdict ok = Classify(With(200), 0, policy, 0.5, 0);
  CHECK(ok.final);
  CHECK_FALSE(ok.gave_up);
  CHECK(ok.signal == HostSignal::kAnswered);
  CHECK(Classify(With(404), 0, policy, 0.5, 0).final);
  CHECK(Classify(With(0, FetchError::kDns), 0, policy, 0.5, 0).final);
  FetchResult busy = With(429);
  busy.retry_after = "30";
  Verdict first = Classify(busy, 0, policy, 0.5, 0);
  CHECK_FALSE(first.final);
  CHECK(first.wait_s == 30.0);  // Retry-After over the 1 s back-off
  CHECK(first.signal == HostSignal::kOverloaded);
  Verdict second = Classify(With(0, FetchError::kConnect), 1, policy, 0.5, 0);
  CHECK_FALSE(second.final);
  CHECK(second.wait_s == 2.0);
  CHECK(second.signal == HostSignal::kUnreachable);
  Verdict last = Classify(busy, 2, policy, 0.5, 0);  // attempts 0, 1 and 2 failed
  CHECK(last.final);
  CHECK(last.gave_up);
  CHECK(last.wait_s == 0.0);
}

TEST_CASE(
    "Classify: a failed lookup in a resolver outage defers past max_retries for "
    "dns_retry_s; one that fails alone spends retries; another address goes at once",
    "[engine][retry]") {
  using frontier::HostSignal;
  const RetryPolicy policy{
      .max_retries = 2, .base_s = 1, .max_s = 60, .dns_retry_s = 100};
  // Back-offs 1 + 2 + 4 + 8 + 16 + 32 = 63 s, + 60 = 123 s: six defer, the
  // seventh gives up.
  CHECK(DnsDefers(0, policy));
  CHECK(DnsDefers(6, policy));
  CHECK_FALSE(DnsDefers(7, policy));
  CHECK_FALSE(DnsDefers(0, {.dns_retry_s = 0}));
  // Each at least 1 s, so a base of 0 still ends.
  CHECK_FALSE(DnsDefers(100, {.base_s = 0, .max_s = 0, .dns_retry_s = 100}));
  FetchResult outage = With(0, FetchError::kDnsFailure);
  outage.dns_outage = true;
  Verdict deferred = Classify(outage, 5, policy, 0.5, 0);  // past max_retries
  CHECK_FALSE(deferred.final);
  CHECK(deferred.wait_s == 32.0);
  CHECK(deferred.signal == HostSignal::kUnresolved);  // the whole host waits
  CHECK(Classify(outage, 7, policy, 0.5, 0).gave_up);
  const FetchResult alone = With(0, FetchError::kDnsFailure);
  CHECK_FALSE(Classify(alone, 1, policy, 0.5, 0).final);
  CHECK(Classify(alone, 2, policy, 0.5, 0).gave_up);
  FetchResult next = With(0, FetchError::kConnect);
  next.other_address = true;
  Verdict at_once = Classify(next, 2, policy, 0.5, 0);
  CHECK_FALSE(at_once.final);
  CHECK(at_once.wait_s == 0.0);
  CHECK(at_once.signal == HostSignal::kNone);  // not a host that is down
}

}  // namespace
}  // namespace crawler::engine
