// engine/recrawl.h: what a visit does to a URL's history record: the
// conditional request, the revisit record a response becomes, the interval
// rule (adaptive and fixed, within bounds) and forgetting a gone URL.
#include "engine/recrawl.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

namespace crawler::engine {
namespace {

constexpr const char* kDigest = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ";
constexpr const char* kOtherDigest = "sha1:ZUNCFD6AG3YJI7ZJP5R2IPVO4LPQVKFO";

HistoryRecord Captured() {
  HistoryRecord r;
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
  HistoryRecord r = Captured();
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
  const HistoryRecord before = Captured();
  std::optional<Revisit> v = RevisitFor(&before, 304, "");
  REQUIRE(v);
  CHECK(v->profile == Revisit::Profile::kServerNotModified);
  CHECK(v->refers_to == before.record_id);
  CHECK(v->refers_to_uri == before.capture_uri);
  CHECK(v->refers_to_date ==
        std::chrono::system_clock::time_point(std::chrono::milliseconds(1'000'000)));
  // The capture's payload digest, never the empty 304 body's (openwayback#224).
  CHECK(v->payload_digest == kDigest);
  CHECK(KindOf(&before, 304, v) == VisitKind::kNotModified);

  v = RevisitFor(&before, 200, kDigest);
  REQUIRE(v);
  CHECK(v->profile == Revisit::Profile::kIdenticalPayloadDigest);
  CHECK(KindOf(&before, 200, v) == VisitKind::kIdentical);

  CHECK_FALSE(RevisitFor(&before, 200, kOtherDigest));
  CHECK(KindOf(&before, 200, std::nullopt) == VisitKind::kChanged);
  CHECK_FALSE(RevisitFor(&before, 404, ""));
  CHECK(KindOf(&before, 404, std::nullopt) == VisitKind::kOther);
  CHECK_FALSE(RevisitFor(nullptr, 304, ""));
  CHECK(KindOf(nullptr, 200, std::nullopt) == VisitKind::kFirst);
  HistoryRecord no_capture = before;  // e.g. only ever answered 404
  no_capture.record_id.clear();
  CHECK_FALSE(RevisitFor(&no_capture, 304, ""));
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
  f.record_id = "<urn:uuid:new>";
  f.payload_digest = kOtherDigest;
  f.uri = "http://a.test/p";
  f.bytes = 7000;
  f.depth = 3;
  HistoryRecord first = NextRecord(nullptr, f, adaptive);
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
  same.record_id = "";
  same.now_ms = 2'010'000;
  HistoryRecord r = NextRecord(&first, same, adaptive);
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
  failed.record_id = "";
  HistoryRecord kept = NextRecord(&r, failed, adaptive);
  CHECK(kept.interval_ms == 5'000);
  CHECK(kept.record_id == r.record_id);
  CHECK(kept.status == r.status);  // no response: the last status stays

  // Fixed: interval_s whatever the visits find.
  const RecrawlConfig fixed = Config("fixed");
  HistoryRecord fx = NextRecord(&first, same, fixed);
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
  HistoryRecord r = NextRecord(nullptr, gone, c);
  CHECK(r.gone == 1);
  CHECK_FALSE(ShouldForget(r, c));
  VisitFacts back = gone;
  back.status = 200;
  HistoryRecord again = NextRecord(&r, back, c);
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
  HistoryRecord r;
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
  HistoryRecord first = NextRecord(nullptr, f, c, 5);
  CHECK(first.checked_ms == 1'000'000);
  CHECK(first.interval_ms == 10'000);  // no estimate yet: interval_s
  VisitFacts same = f;
  same.status = 304;
  same.kind = VisitKind::kNotModified;
  same.now_ms = 1'010'000;
  HistoryRecord next = NextRecord(&first, same, c, 5);
  CHECK(next.observed_ms == 10'000);
  CHECK(next.unchanged == 1);
  // Rate 0.5 / 10 s = 0.05: x solves 1 - (1 + x) e^-x = 0.25, interval x / 0.05.
  CHECK(static_cast<double>(next.interval_ms) ==
        Approx(std::clamp(OptimalInterval(0.05, 5), 5.0, 20.0) * 1000).epsilon(0.01));
  VisitFacts changed = f;
  changed.kind = VisitKind::kChanged;
  changed.now_ms = 1'020'000;
  HistoryRecord hot = NextRecord(&next, changed, c, 5);
  CHECK(hot.observed_ms == 20'000);
  CHECK(hot.changed == 1);
}

}  // namespace
}  // namespace crawler::engine
