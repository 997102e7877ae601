// See engine/recrawl.h.
#include "engine/recrawl.h"

#include <curl/curl.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace crawler::engine {

std::vector<std::string> ConditionalHeaders(const output::HistoryRecord& r) {
  std::vector<std::string> out;
  if (!r.etag.empty()) out.push_back("If-None-Match: " + r.etag);
  if (!r.last_modified.empty()) out.push_back("If-Modified-Since: " + r.last_modified);
  return out;
}

std::optional<output::Revisit> RevisitFor(const output::HistoryRecord* before,
                                          long status, std::string_view digest) {
  // Without an earlier full capture there is nothing to refer to: the
  // response is written whole.
  if (before == nullptr || before->capture_ms == 0 || before->payload_digest.empty())
    return std::nullopt;
  output::Revisit v;
  if (status == 304) {
    v.profile = output::Revisit::Profile::kServerNotModified;
  } else if (status == 200 && digest == before->payload_digest) {
    v.profile = output::Revisit::Profile::kIdenticalPayloadDigest;
  } else {
    return std::nullopt;
  }
  v.refers_to = before->record_id;
  v.refers_to_uri = before->capture_uri;
  v.refers_to_date = std::chrono::system_clock::time_point(
      std::chrono::milliseconds(before->capture_ms));
  v.payload_digest = before->payload_digest;  // the capture's, never a 304's empty body
  return v;
}

VisitKind KindOf(const output::HistoryRecord* before, long status,
                 const std::optional<output::Revisit>& revisit) {
  if (before == nullptr) return VisitKind::kFirst;
  if (revisit) {
    return revisit->profile == output::Revisit::Profile::kServerNotModified
               ? VisitKind::kNotModified
               : VisitKind::kIdentical;
  }
  return status == 200 ? VisitKind::kChanged : VisitKind::kOther;
}

std::optional<uint64_t> HttpDateMs(std::string_view text) {
  if (text.empty() || text.size() > 64) return std::nullopt;
  const std::time_t t = curl_getdate(std::string(text).c_str(), nullptr);
  if (t < 0) return std::nullopt;
  return static_cast<uint64_t>(t) * 1000;
}

namespace {

// How long before the visit the change it found was made (ms), when the
// server dated it: a Last-Modified later than the one of the version seen
// before (so made after that visit: that visit would have seen it), taken
// from the response's Date (the same clock; the visit's own time without
// one). HTTP-dates are whole seconds: a change dated in the visit's own
// second counts half of one, and against the visit's own clock a change is
// taken to be half a second into the second it names.
std::optional<uint64_t> DatedChange(const output::HistoryRecord& before,
                                    const VisitFacts& f) {
  const std::optional<uint64_t> made = HttpDateMs(f.last_modified),
                                was = HttpDateMs(before.last_modified);
  if (!made || !was || *made <= *was) return std::nullopt;
  // Dated after the response: not a clock to trust.
  if (const std::optional<uint64_t> date = HttpDateMs(f.date)) {
    if (*date < *made) return std::nullopt;
    return *date > *made ? *date - *made : 500;  // both truncated alike
  }
  if (f.now_ms + 1000 < *made) return std::nullopt;
  return f.now_ms > *made + 1000 ? f.now_ms - *made - 500 : 500;  // the change: ~0.5 s in
}

}  // namespace

output::HistoryRecord NextRecord(const output::HistoryRecord* before, const VisitFacts& f,
                                 const RecrawlConfig& c, double mu) {
  output::HistoryRecord r = before != nullptr ? *before : output::HistoryRecord{};
  r.fetched_ms = f.now_ms;
  r.depth = f.depth;
  r.kind = f.url_kind;
  if (f.status > 0) r.status = static_cast<int32_t>(f.status);
  // Validators: a full answer's replace the old ones (even by none); a 304
  // may repeat or update them.
  if (f.status > 0 && f.status != 304) {
    r.etag = std::string(f.etag);
    r.last_modified = std::string(f.last_modified);
  } else if (f.status == 304) {
    if (!f.etag.empty()) r.etag = std::string(f.etag);
    if (!f.last_modified.empty()) r.last_modified = std::string(f.last_modified);
  }
  const bool compared = f.kind == VisitKind::kNotModified ||
                        f.kind == VisitKind::kIdentical || f.kind == VisitKind::kChanged;
  if (compared && r.checked_ms > 0 && f.now_ms > r.checked_ms) {
    const uint64_t gap = f.now_ms - r.checked_ms;
    r.observed_ms += gap;
    const std::optional<uint64_t> since =
        f.kind == VisitKind::kChanged && before != nullptr ? DatedChange(*before, f)
                                                           : std::nullopt;
    r.dated += since.has_value();
    r.exposure_ms += since ? std::min(*since, gap) : gap;
  }
  if (compared || f.kind == VisitKind::kFirst) r.checked_ms = f.now_ms;
  if (f.capture && f.status == 200) {  // a full capture to refer to
    r.record_id = std::string(f.record_id);
    r.payload_digest = std::string(f.payload_digest);
    r.capture_uri = std::string(f.uri);
    r.content_type = std::string(f.content_type);
    r.capture_ms = f.capture_ms != 0 ? f.capture_ms : f.now_ms;
    r.bytes = f.bytes;
  }
  r.gone = f.status == 404 || f.status == 410 ? r.gone + 1 : 0;
  double interval = before != nullptr && before->interval_ms > 0
                        ? static_cast<double>(before->interval_ms) / 1000
                        : c.interval_s;
  switch (f.kind) {
    case VisitKind::kFirst:
      interval = c.interval_s;
      break;
    case VisitKind::kNotModified:
    case VisitKind::kIdentical:
      ++r.unchanged;
      if (c.adapt == "adaptive") interval *= 1 + c.inc_rate;
      break;
    case VisitKind::kChanged:
      ++r.changed;
      if (c.adapt == "adaptive") interval *= 1 - c.dec_rate;
      break;
    case VisitKind::kOther:
      break;
  }
  if (c.adapt == "fixed") interval = c.interval_s;
  if (c.adapt == "change-rate" && r.changed + r.unchanged > 0 && mu > 0) {
    interval = BestInterval(EstimatedRate(r), mu, c.age_weight / c.interval_s,
                            c.min_interval_s, c.max_interval_s);
  }
  if (std::isnan(interval)) interval = c.max_interval_s;  // never NaN's undefined cast
  interval = std::clamp(interval, c.min_interval_s, c.max_interval_s);
  r.interval_ms = static_cast<uint64_t>(std::max(1.0, std::round(interval * 1000)));
  r.due_ms = f.now_ms + r.interval_ms;
  return r;
}

double EstimatedRate(const output::HistoryRecord& r) {
  const double n = r.changed + r.unchanged, x = r.changed;
  const double observed_s = static_cast<double>(r.observed_ms) / 1000;
  if (n == 0 || observed_s <= 0) return 0;
  if (x == 0) return 0.5 / observed_s;
  if (r.dated == r.changed && r.exposure_ms > 0)
    return x / (static_cast<double>(r.exposure_ms) / 1000);
  return -std::log((n - x + 0.5) / (n + 0.5)) / (observed_s / n);
}

double OptimalInterval(double rate, double mu) {
  if (rate <= 0) return std::numeric_limits<double>::infinity();
  const double y = mu * rate;
  if (y >= 1) return std::numeric_limits<double>::infinity();
  // 1 - (1 + x) e^-x rises from 0 to 1: bisection.
  double lo = 0, hi = 64;
  for (int i = 0; i < 60; ++i) {
    const double m = (lo + hi) / 2;
    (1 - (1 + m) * std::exp(-m) < y ? lo : hi) = m;
  }
  return (lo + hi) / 2 / rate;
}

double BestInterval(double rate, double mu, double nu, double min_s, double max_s) {
  if (!(nu > 0) || !(rate > 0))
    return std::clamp(OptimalInterval(rate, mu), min_s, max_s);
  // Unimodal in log I: a golden-section search, to ~0.1%.
  auto value = [&](double log_i) {
    const double i = std::exp(log_i), x = rate * i, changed = 1 - std::exp(-x);
    return changed / x - nu * (i / 2 - 1 / rate + changed / (rate * rate * i)) - mu / i;
  };
  constexpr double kGolden = 0.6180339887498949;
  double lo = std::log(std::max(min_s, 1e-3)), hi = std::log(std::max(max_s, 1e-3));
  for (int k = 0; k < 48 && hi - lo > 1e-3; ++k) {
    const double a = hi - kGolden * (hi - lo), b = lo + kGolden * (hi - lo);
    if (value(a) < value(b)) {
      lo = a;
    } else {
      hi = b;
    }
  }
  return std::exp((lo + hi) / 2);
}

double InitialMu(const RecrawlConfig& c) {
  return (1 - 2 * std::exp(-1.0)) * c.interval_s;  // x = 1 at rate 1 / interval_s
}

double NextMu(double mu, double demand_per_s, uint64_t urls, const RecrawlConfig& c) {
  if (urls == 0 || demand_per_s <= 0) return mu;
  const double budget = static_cast<double>(urls) / c.interval_s;
  return mu * std::clamp(std::sqrt(demand_per_s / budget), 0.5, 2.0);
}

uint64_t DemandMicroHertz(uint64_t interval_ms) {
  return interval_ms == 0 ? 0 : (uint64_t{1'000'000'000} + interval_ms / 2) / interval_ms;
}

std::string IntervalBucket(uint64_t interval_ms) {
  int k = 0;
  while (k < 25 && (uint64_t{1000} << k) < interval_ms) ++k;
  return std::string("2^") + static_cast<char>('0' + k / 10) +
         static_cast<char>('0' + k % 10);
}

bool ShouldForget(const output::HistoryRecord& r, const RecrawlConfig& c) {
  return c.forget_gone_after > 0 && r.gone >= c.forget_gone_after;
}

}  // namespace crawler::engine
