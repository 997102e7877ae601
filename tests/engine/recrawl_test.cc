// engine/recrawl.h: what a visit does to a URL's history record: the
// conditional request, the revisit record a response becomes, the interval
// rule (adaptive and fixed, within bounds) and forgetting a gone URL.
#include "engine/recrawl.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>

namespace crawler::engine {
namespace {

constexpr const char* kDigest = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ";
constexpr const char* kOtherDigest = "sha1:ZUNCFD6AG3YJI7ZJP5R2IPVO4LPQVKFO";

output::HistoryRecord Captured() {
  output::HistoryRecord r;
  r.fetched_ms = 1'000'000;
  r.status = 200;
  r.etag = "\"v1\"";
  r.last_modified = "Fri, 27 Nov 2026 11:00:00 GMT";
  r.payload_digest = kDigest;
  r.record_id = "<urn:uuid:4c1d6a5e-2f36-4f0e-9a52-9d3c1f0b7e21>";
  r.capture_ms = 1'000'000;
  r.capture_uri = "http://a.test/p";
  r.bytes = 5000;
  r.interval_ms = 10'000;
  return r;
}

RecrawlConfig Config(const std::string& adapt) {
  RecrawlConfig c;
  c.enabled = true;
  c.interval_s = 10;
  c.min_interval_s = 5;
  c.max_interval_s = 20;
  c.adapt = adapt;
  return c;
}

TEST_CASE("Recrawl rules: conditional headers from the record's validators",
          "[engine][recrawl]") {
  output::HistoryRecord r = Captured();
  CHECK(ConditionalHeaders(r) ==
        std::vector<std::string>{"If-None-Match: \"v1\"",
                                 "If-Modified-Since: Fri, 27 Nov 2026 11:00:00 GMT"});
  r.etag.clear();
  CHECK(ConditionalHeaders(r).size() == 1);
  r.last_modified.clear();
  CHECK(ConditionalHeaders(r).empty());
}

TEST_CASE(
    "Recrawl rules: a 304 and a 200 with the capture's digest are revisit records that "
    "refer to the capture; a changed 200 or a URL without a capture is a full record",
    "[engine][recrawl]") {
  const output::HistoryRecord before = Captured();
  std::optional<output::Revisit> v = RevisitFor(&before, 304, "");
  REQUIRE(v);
  CHECK(v->profile == output::Revisit::Profile::kServerNotModified);
  CHECK(v->refers_to == before.record_id);
  CHECK(v->refers_to_uri == before.capture_uri);
  CHECK(v->refers_to_date ==
        std::chrono::system_clock::time_point(std::chrono::milliseconds(1'000'000)));
  // The capture's payload digest, never the empty 304 body's (openwayback#224).
  CHECK(v->payload_digest == kDigest);
  CHECK(KindOf(&before, 304, v) == VisitKind::kNotModified);

  v = RevisitFor(&before, 200, kDigest);
  REQUIRE(v);
  CHECK(v->profile == output::Revisit::Profile::kIdenticalPayloadDigest);
  CHECK(KindOf(&before, 200, v) == VisitKind::kIdentical);

  CHECK_FALSE(RevisitFor(&before, 200, kOtherDigest));
  CHECK(KindOf(&before, 200, std::nullopt) == VisitKind::kChanged);
  CHECK_FALSE(RevisitFor(&before, 404, ""));
  CHECK(KindOf(&before, 404, std::nullopt) == VisitKind::kOther);
  CHECK_FALSE(RevisitFor(nullptr, 304, ""));
  CHECK(KindOf(nullptr, 200, std::nullopt) == VisitKind::kFirst);
  output::HistoryRecord no_capture = before;  // e.g. only ever answered 404
  no_capture.record_id.clear();
  no_capture.capture_ms = 0;
  no_capture.payload_digest.clear();
  CHECK_FALSE(RevisitFor(&no_capture, 304, ""));
  // A capture of an earlier crawl (dedup.from), whose index names no record:
  // referred to by URI and date alone.
  output::HistoryRecord earlier = before;
  earlier.record_id.clear();
  v = RevisitFor(&earlier, 304, "");
  REQUIRE(v);
  CHECK(v->refers_to.empty());
  CHECK(v->refers_to_uri == before.capture_uri);
  CHECK(v->payload_digest == kDigest);
}

TEST_CASE(
    "Recrawl rules: adaptive intervals grow x (1 + inc_rate) when unchanged, shrink x "
    "(1 - dec_rate) when changed, within bounds; fixed stays",
    "[engine][recrawl]") {
  const RecrawlConfig adaptive = Config("adaptive");
  VisitFacts f;
  f.now_ms = 2'000'000;
  f.status = 200;
  f.kind = VisitKind::kFirst;
  f.etag = "\"v2\"";
  f.last_modified = "Fri, 27 Nov 2026 12:00:00 GMT";
  f.capture = true;
  f.record_id = "<urn:uuid:new>";
  f.payload_digest = kOtherDigest;
  f.uri = "http://a.test/p";
  f.bytes = 7000;
  f.depth = 3;
  output::HistoryRecord first = NextRecord(nullptr, f, adaptive);
  CHECK(first.interval_ms == 10'000);
  CHECK(first.due_ms == 2'010'000);
  CHECK(first.etag == "\"v2\"");
  CHECK(first.record_id == "<urn:uuid:new>");
  CHECK(first.capture_ms == 2'000'000);
  CHECK(first.bytes == 7000);
  CHECK(first.depth == 3);
  CHECK(first.changed + first.unchanged == 0);

  // Unchanged (304): x 1.4; the capture and, without new ones, the
  // validators stay.
  VisitFacts same = f;
  same.status = 304;
  same.kind = VisitKind::kNotModified;
  same.etag = "";  // a 304 without validators keeps the record's
  same.last_modified = "";
  same.capture = false;
  same.record_id = "";
  same.now_ms = 2'010'000;
  output::HistoryRecord r = NextRecord(&first, same, adaptive);
  CHECK(r.interval_ms == 14'000);
  CHECK(r.due_ms == 2'024'000);
  CHECK(r.unchanged == 1);
  CHECK(r.etag == "\"v2\"");
  CHECK(r.record_id == "<urn:uuid:new>");
  CHECK(r.capture_ms == 2'000'000);
  r = NextRecord(&r, same, adaptive);
  CHECK(r.interval_ms == 19'600);
  r = NextRecord(&r, same, adaptive);
  CHECK(r.interval_ms == 20'000);  // max_interval_s

  // Changed: x 0.8, and the new capture is what later revisits refer to.
  VisitFacts changed = f;
  changed.kind = VisitKind::kChanged;
  changed.record_id = "<urn:uuid:newer>";
  changed.now_ms = 3'000'000;
  r = NextRecord(&r, changed, adaptive);
  CHECK(r.interval_ms == 16'000);
  CHECK(r.changed == 1);
  CHECK(r.record_id == "<urn:uuid:newer>");
  CHECK(r.capture_ms == 3'000'000);
  for (int i = 0; i < 10; ++i) r = NextRecord(&r, changed, adaptive);
  CHECK(r.interval_ms == 5'000);  // min_interval_s

  // An error keeps the interval.
  VisitFacts failed = f;
  failed.status = 0;
  failed.kind = VisitKind::kOther;
  failed.capture = false;
  failed.record_id = "";
  output::HistoryRecord kept = NextRecord(&r, failed, adaptive);
  CHECK(kept.interval_ms == 5'000);
  CHECK(kept.record_id == r.record_id);
  CHECK(kept.status == r.status);  // no response: the last status stays

  // Fixed: interval_s whatever the visits find.
  const RecrawlConfig fixed = Config("fixed");
  output::HistoryRecord fx = NextRecord(&first, same, fixed);
  CHECK(fx.interval_ms == 10'000);
  fx = NextRecord(&fx, changed, fixed);
  CHECK(fx.interval_ms == 10'000);
}

TEST_CASE("Recrawl rules: a URL gone (404/410) on forget_gone_after visits in a row",
          "[engine][recrawl]") {
  RecrawlConfig c = Config("adaptive");
  c.forget_gone_after = 2;
  VisitFacts gone;
  gone.now_ms = 1;
  gone.status = 404;
  gone.kind = VisitKind::kOther;
  output::HistoryRecord r = NextRecord(nullptr, gone, c);
  CHECK(r.gone == 1);
  CHECK_FALSE(ShouldForget(r, c));
  VisitFacts back = gone;
  back.status = 200;
  output::HistoryRecord again = NextRecord(&r, back, c);
  CHECK(again.gone == 0);  // in a row only
  gone.status = 410;
  r = NextRecord(&r, gone, c);
  CHECK(r.gone == 2);
  CHECK(ShouldForget(r, c));
  c.forget_gone_after = 0;
  CHECK_FALSE(ShouldForget(r, c));
}

TEST_CASE(
    "Recrawl rules, change-rate: the estimator (Cho and Garcia-Molina), the optimal "
    "interval at a price, and the price following demand",
    "[engine][recrawl]") {
  output::HistoryRecord r;
  CHECK(EstimatedRate(r) == 0);  // nothing compared yet
  r.unchanged = 10;
  r.observed_ms = 100'000;  // 10 visits 10 s apart, no change: half a change in 100 s
  CHECK(EstimatedRate(r) == Approx(0.005));
  r.unchanged = 5;
  r.changed = 5;  // -ln(5.5 / 10.5) / 10 s
  CHECK(EstimatedRate(r) == Approx(std::log(10.5 / 5.5) / 10));
  r.unchanged = 0;
  r.changed = 10;  // changed at every visit: large, finite
  CHECK(EstimatedRate(r) == Approx(std::log(21.0) / 10));

  // 1 - (1 + x) e^-x = mu rate, interval = x / rate.
  const double x1 = OptimalInterval(1.0, 1 - 2 * std::exp(-1.0));
  CHECK(x1 == Approx(1.0).epsilon(1e-6));
  // Slow pages: interval ~ sqrt(2 mu / rate), longer the slower.
  CHECK(OptimalInterval(0.001, 0.01) > OptimalInterval(0.01, 0.01));
  CHECK(OptimalInterval(0.001, 0.01) == Approx(std::sqrt(2 * 0.01 / 0.001)).epsilon(0.1));
  // A page changing too often for the price: never worth a visit.
  CHECK(std::isinf(OptimalInterval(10, 0.2)));
  CHECK(std::isinf(OptimalInterval(0, 1)));

  RecrawlConfig c = Config("change-rate");
  CHECK(InitialMu(c) == Approx((1 - 2 * std::exp(-1.0)) * 10));
  // 100 URLs at one revisit per 10 s: a budget of 10 per s.
  CHECK(NextMu(1, 40, 100, c) == Approx(2));  // asks 4x: x sqrt(4)
  CHECK(NextMu(1, 2.5, 100, c) == Approx(0.5));
  CHECK(NextMu(1, 1000, 100, c) == Approx(2));  // at most x2 a step
  CHECK(NextMu(1, 10, 100, c) == Approx(1));
  CHECK(NextMu(1, 5, 0, c) == 1);  // an empty history: unchanged

  // NextRecord: the time base grows between comparisons, and the interval
  // is the optimal one for the estimate, within bounds.
  VisitFacts f;
  f.now_ms = 1'000'000;
  f.status = 200;
  f.kind = VisitKind::kFirst;
  output::HistoryRecord first = NextRecord(nullptr, f, c, 5);
  CHECK(first.checked_ms == 1'000'000);
  CHECK(first.interval_ms == 10'000);  // no estimate yet: interval_s
  VisitFacts same = f;
  same.status = 304;
  same.kind = VisitKind::kNotModified;
  same.now_ms = 1'010'000;
  output::HistoryRecord next = NextRecord(&first, same, c, 5);
  CHECK(next.observed_ms == 10'000);
  CHECK(next.unchanged == 1);
  // Rate 0.5 / 10 s = 0.05: x solves 1 - (1 + x) e^-x = 0.25, interval x / 0.05.
  CHECK(static_cast<double>(next.interval_ms) ==
        Approx(std::clamp(OptimalInterval(0.05, 5), 5.0, 20.0) * 1000).epsilon(0.01));
  VisitFacts changed = f;
  changed.kind = VisitKind::kChanged;
  changed.now_ms = 1'020'000;
  output::HistoryRecord hot = NextRecord(&next, changed, c, 5);
  CHECK(hot.observed_ms == 20'000);
  CHECK(hot.changed == 1);
}

TEST_CASE(
    "Recrawl rules, change-rate: changes the server dates (Last-Modified) give the "
    "maximum-likelihood rate, anything undated falls back to Cho's estimator",
    "[engine][recrawl]") {
  CHECK(HttpDateMs("Fri, 27 Nov 2026 11:00:00 GMT") == uint64_t{1'795'777'200'000});
  CHECK_FALSE(HttpDateMs("yesterday").has_value());
  CHECK_FALSE(HttpDateMs("").has_value());

  const RecrawlConfig c = Config("change-rate");
  output::HistoryRecord r = Captured();  // Last-Modified 11:00:00, checked at 11:00:10
  r.checked_ms = *HttpDateMs("Fri, 27 Nov 2026 11:00:10 GMT");
  VisitFacts same;
  same.status = 304;
  same.kind = VisitKind::kNotModified;
  same.now_ms = r.checked_ms + 20'000;  // 20 s without a change
  r = NextRecord(&r, same, c, 5);
  CHECK(r.exposure_ms == 20'000);
  CHECK(r.dated == 0);
  // Changed: made at 11:00:55, answered at 11:01:00 (Date): the page was
  // seen unchanged for 5 s of the 30 s gap, and one change.
  VisitFacts changed;
  changed.status = 200;
  changed.kind = VisitKind::kChanged;
  changed.now_ms = r.checked_ms + 30'000;
  changed.last_modified = "Fri, 27 Nov 2026 11:00:55 GMT";
  changed.date = "Fri, 27 Nov 2026 11:01:00 GMT";
  output::HistoryRecord dated = NextRecord(&r, changed, c, 5);
  CHECK(dated.dated == 1);
  CHECK(dated.changed == 1);
  CHECK(dated.exposure_ms == 25'000);
  CHECK(dated.observed_ms == 50'000);
  CHECK(EstimatedRate(dated) == Approx(1 / 25.0));  // X / exposure
  // Without Date: against the visit's clock, half a second into the second.
  VisitFacts own = changed;
  own.date = "";
  own.now_ms = *HttpDateMs("Fri, 27 Nov 2026 11:01:00 GMT") + 200;
  CHECK(NextRecord(&r, own, c, 5).exposure_ms == 20'000 + 4'700);
  // In the response's own second: half a second.
  VisitFacts instant = changed;
  instant.last_modified = changed.date;
  CHECK(NextRecord(&r, instant, c, 5).exposure_ms == 20'000 + 500);

  // Undated: no Last-Modified, one not after the earlier version's, or one
  // after the response's Date. The whole gap counts, and the estimate is
  // Cho's (all changes must be dated for the other).
  for (std::string_view lm :
       {std::string_view(""), std::string_view("Fri, 27 Nov 2026 11:00:00 GMT"),
        std::string_view("Fri, 27 Nov 2026 11:02:00 GMT")}) {
    VisitFacts undated = changed;
    undated.last_modified = lm;
    output::HistoryRecord u = NextRecord(&r, undated, c, 5);
    CHECK(u.dated == 0);
    CHECK(u.exposure_ms == 50'000);
    CHECK(EstimatedRate(u) == Approx(std::log(2.5 / 1.5) / 25));
  }
}

TEST_CASE(
    "Recrawl rules: the next visit is after this one whatever the estimate, the price "
    "or the bounds (NUTCH-1564)",
    "[engine][recrawl]") {
  RecrawlConfig c = Config("change-rate");
  c.min_interval_s = 0;
  output::HistoryRecord r = Captured();
  r.checked_ms = 1'000'000;
  r.unchanged = 3;
  r.observed_ms = 30'000;
  for (double mu :
       {0.0, 1e-300, 5.0, 1e300, std::nan(""), std::numeric_limits<double>::infinity()}) {
    for (VisitKind kind :
         {VisitKind::kNotModified, VisitKind::kChanged, VisitKind::kOther}) {
      VisitFacts f;
      f.status = kind == VisitKind::kOther ? 503 : 200;
      f.kind = kind;
      f.now_ms = 1'010'000;
      f.last_modified = "Fri, 27 Nov 2026 11:00:05 GMT";  // 0 s before Date
      f.date = f.last_modified;
      const output::HistoryRecord next = NextRecord(&r, f, c, mu);
      CHECK(next.due_ms > f.now_ms);
      CHECK(next.interval_ms <= 20'000);
    }
  }
  // A record from a crawl stopped long ago: due from this visit, never then.
  output::HistoryRecord old = r;
  old.due_ms = 5;
  old.interval_ms = 0;
  VisitFacts late;
  late.status = 304;
  late.kind = VisitKind::kNotModified;
  late.now_ms = 9'000'000'000;
  CHECK(NextRecord(&old, late, Config("adaptive")).due_ms > late.now_ms);
}

TEST_CASE(
    "Recrawl rules, change-rate: age_weight visits a page too fast for the price, more "
    "often the more age costs",
    "[engine][recrawl]") {
  // nu = 0: the clamped Lagrange interval.
  CHECK(BestInterval(0.001, 0.01, 0, 1, 100) ==
        Approx(OptimalInterval(0.001, 0.01)).epsilon(1e-9));
  CHECK(BestInterval(10, 0.2, 0, 1, 100) == 100);   // too fast: max_s
  CHECK(BestInterval(0, 0.2, 0.5, 1, 100) == 100);  // never changes
  // With a cost of age the fast page is visited, the more often the higher
  // the cost; each interval is the maximum of its objective (a grid says).
  const double cheap = BestInterval(10, 0.2, 0.01, 1, 100);
  const double dear = BestInterval(10, 0.2, 0.1, 1, 100);
  CHECK(cheap < 100);
  CHECK(dear < cheap);
  for (double nu : {0.01, 0.1}) {
    auto value = [&](double i) {
      const double x = 10 * i, changed = 1 - std::exp(-x);
      return changed / x - nu * (i / 2 - 0.1 + changed / (100 * i)) - 0.2 / i;
    };
    const double best = BestInterval(10, 0.2, nu, 1, 100);
    for (double i = 1; i <= 100; i *= 1.01) CHECK(value(best) >= value(i) - 1e-9);
  }
  // Bounds hold.
  CHECK(BestInterval(10, 1e-9, 5, 2, 100) >= 2 * 0.999);
  CHECK(BestInterval(1e-9, 0.2, 1e-9, 1, 100) <= 100 * 1.001);
  // In NextRecord: age_weight / interval_s is nu.
  RecrawlConfig c = Config("change-rate");
  c.age_weight = 0.5;
  output::HistoryRecord r = Captured();
  r.checked_ms = 1'000'000;
  r.changed = 10;
  r.dated = 10;
  r.exposure_ms = 1'000;  // 10 changes a second
  r.observed_ms = 100'000;
  VisitFacts f;
  f.status = 304;
  f.kind = VisitKind::kNotModified;
  f.now_ms = 1'001'000;
  const output::HistoryRecord next = NextRecord(&r, f, c, 0.2);
  CHECK(static_cast<double>(next.interval_ms) ==
        Approx(1000 * BestInterval(EstimatedRate(next), 0.2, 0.05, 5, 20)).epsilon(1e-3));
  CHECK(next.interval_ms < 20'000);
}

}  // namespace
}  // namespace crawler::engine
