// See revisits.h.
#include "engine/revisits.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "base/sha1.h"

namespace crawler::engine {
namespace {

// The report's interval buckets and the revisit demand follow a record's
// interval: from `was` (none: a record new here) to `now` (none: it left).
void CountInterval(Counters& c, std::optional<uint64_t> was,
                   std::optional<uint64_t> now) {
  c.MoveInterval(was ? IntervalBucket(*was) : "", now ? IntervalBucket(*now) : "",
                 was ? DemandMicroHertz(*was) : 0, now ? DemandMicroHertz(*now) : 0);
}

std::optional<uint64_t> IntervalOf(const output::HistoryRecord* r) {
  return r != nullptr ? std::optional<uint64_t>(r->interval_ms) : std::nullopt;
}

}  // namespace

Result<std::optional<output::HistoryRecord>> Revisits::Recall(
    const std::string& url) const {
  if (p_.history == nullptr) return std::optional<output::HistoryRecord>();
  return p_.history->Get(url);
}

Revisits::Classified Revisits::Classify(const output::HistoryRecord* before,
                                        const FetchResult& r, bool page,
                                        output::Exchange* ex) const {
  Classified c;
  // Payloads stored once: a whole 200 page of at least the minimum size.
  const bool dedup = p_.payloads != nullptr && page && r.status == 200 && !r.truncated &&
                     r.body.size() >= p_.config.dedup_payload_min_bytes;
  if ((before != nullptr && r.status == 200) || dedup)
    ex->payload_digest = WarcDigest(r.body);  // computed once, kept by Prepare
  ex->revisit = RevisitFor(before, r.status, ex->payload_digest);
  c.visit = KindOf(before, r.status, ex->revisit);
  if (ex->revisit || !dedup) return c;
  auto first = p_.payloads->FirstCapture(ex->payload_digest);
  if (!first.ok()) {
    // Nothing lost: the response is stored whole.
    spdlog::warn("{}: payload not looked up, stored whole: {}", r.url,
                 first.status().ToString());
    return c;
  }
  if (!first->has_value()) {
    c.first_capture = true;
    return c;
  }
  const output::PayloadCapture& to = **first;
  ex->revisit = output::Revisit{
      .profile = output::Revisit::Profile::kIdenticalPayloadDigest,
      .refers_to = to.record_id,
      .refers_to_uri = to.uri,
      .refers_to_date =
          std::chrono::system_clock::time_point(std::chrono::milliseconds(to.date_ms)),
      .payload_digest = ex->payload_digest};
  c.duplicate_of = to;
  return c;
}

Status Revisits::Stored(const FetchResult& r, const Classified& c,
                        std::string_view response_id, std::string_view payload_digest,
                        std::chrono::system_clock::time_point date) {
  if (p_.payloads == nullptr) return Status::Ok();
  if (c.duplicate_of) {
    p_.counters.Add(&CrawlSummary::payload_revisits);
    p_.counters.Add(&CrawlSummary::payload_bytes_saved, r.body.size());
    return Status::Ok();
  }
  if (!c.first_capture) return Status::Ok();
  return p_.payloads->AddCapture(payload_digest, {.uri = r.url,
                                                  .record_id = std::string(response_id),
                                                  .date_ms = UnixMs(date),
                                                  .bytes = r.body.size()});
}

Status Revisits::Remember(const Visit& v, bool* forget) {
  *forget = false;
  if (p_.history == nullptr) return Status::Ok();
  const FetchResult& r = v.result;
  const frontier::UrlEntry& e = v.entry;
  const output::HistoryRecord* before = v.before;
  // A URL that never answered is not kept (given up: forgotten, worker.h).
  if (r.status == 0 && before == nullptr) return Status::Ok();
  const VisitKind kind = v.classified.visit;
  switch (kind) {
    case VisitKind::kNotModified:
      p_.counters.Add(&CrawlSummary::revisits_not_modified);
      p_.counters.Add(&CrawlSummary::revisit_bytes_saved, before->bytes);
      break;
    case VisitKind::kIdentical:
      p_.counters.Add(&CrawlSummary::revisits_identical);
      p_.counters.Add(&CrawlSummary::revisit_bytes_saved, before->bytes);
      break;
    case VisitKind::kChanged:
      p_.counters.Add(&CrawlSummary::revisits_changed);
      break;
    case VisitKind::kFirst:
    case VisitKind::kOther:
      break;
  }
  // Only a full capture is what later revisits refer to: this response, or
  // the first capture of its payload it was written as a revisit of.
  const bool full = kind == VisitKind::kFirst || kind == VisitKind::kChanged;
  const std::optional<output::PayloadCapture>& dup = v.classified.duplicate_of;
  VisitFacts f{.now_ms = UnixMs(),
               .status = r.status,
               .kind = kind,
               .etag = r.etag,
               .last_modified = r.last_modified,
               .date = r.date,
               .capture = full,
               .record_id = !full ? ""
                            : dup ? dup->record_id
                                  : v.response_id,
               .payload_digest = v.payload_digest,
               .uri = dup ? dup->uri : r.url,
               .content_type = r.content_type_header,
               .capture_ms = dup ? dup->date_ms : UnixMs(v.date),
               .bytes = r.body.size(),
               .depth = e.depth,
               .url_kind = static_cast<uint8_t>(e.kind)};
  output::HistoryRecord next = NextRecord(before, f, p_.config.recrawl, p_.mu.load());
  if (!ShouldForget(next, p_.config.recrawl)) {
    CountInterval(p_.counters, IntervalOf(before), next.interval_ms);
    return p_.history->Put(e.url, next);
  }
  CountInterval(p_.counters, IntervalOf(before), std::nullopt);
  spdlog::info("{}: gone ({}) on {} visits in a row: forgotten", e.url, r.status,
               next.gone);
  p_.counters.Add(&CrawlSummary::history_forgotten);
  *forget = true;
  return p_.history->Erase(e.url);
}

Status Revisits::Postpone(const std::string& url) {
  if (p_.history == nullptr) return Status::Ok();
  auto record = p_.history->Get(url);
  if (!record.ok() || !record->has_value()) return record.status();
  output::HistoryRecord r = std::move(**record);
  r.due_ms = UnixMs() + std::max<uint64_t>(r.interval_ms, 1000);
  return p_.history->Put(url, r);
}

Status Revisits::Arrive(const ShardState& s) {
  if (p_.history == nullptr) return Status::Ok();
  if (s.own) {
    // --resume restored this node's whole history; the shards it did not
    // get back are another node's now, with their records.
    std::vector<uint32_t> kept = s.shards;
    std::sort(kept.begin(), kept.end());
    return EraseIf([&](std::string_view url) {
      return !std::binary_search(kept.begin(), kept.end(),
                                 p_.routing->ShardOf(frontier::HostKey(url))) &&
             !p_.routing->Owns(url);
    });
  }
  for (const auto& [url, r] : s.history) {
    auto old = p_.history->Get(url);
    if (!old.ok()) return old.status();
    CountInterval(p_.counters, IntervalOf(old->has_value() ? &**old : nullptr),
                  r.interval_ms);
    Status st = p_.history->Put(url, r);
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

Status Revisits::Erase(const std::vector<uint32_t>& shards) {
  if (p_.history == nullptr) return Status::Ok();
  MutexLock moving(p_.shards_moving);
  return EraseIf([&](std::string_view url) {
    return std::binary_search(shards.begin(), shards.end(),
                              p_.routing->ShardOf(frontier::HostKey(url)));
  });
}

// A walk of the whole history: O(records) per shard move (not yet measured
// on a big history: docs/recrawl.md).
Status Revisits::EraseIf(const std::function<bool(std::string_view)>& pred) {
  std::vector<std::pair<std::string, uint64_t>> gone;  // URL, interval
  Status st =
      p_.history->ForEach([&](std::string_view url, const output::HistoryRecord& r) {
        if (pred(url)) gone.emplace_back(std::string(url), r.interval_ms);
        return Status::Ok();
      });
  for (const auto& [url, interval_ms] : gone) {
    if (!st.ok()) return st;
    CountInterval(p_.counters, interval_ms, std::nullopt);
    st = p_.history->Erase(url);
  }
  if (!st.ok()) return st;
  if (!gone.empty())
    spdlog::info("cluster: {} URL history records of shards held elsewhere erased here",
                 gone.size());
  return Status::Ok();
}

}  // namespace crawler::engine
