// Room engine/ (docs/architecture.md): a worker's side of continuous
// crawling ([recrawl]) and of payloads stored once (dedup.payload), a part
// of its own: the URL history read before a fetch (Recall) and written
// after it (Remember), what a response is written as (Classify), a payload
// archived (Stored), a revisit not fetched pushed on (Postpone), and a
// cluster node's shards moving with their records (Arrive, Erase).
// engine/recrawl.h has the rules, output/history.h the store. With
// [recrawl] off the history calls do nothing; with dedup.payload off,
// the payload ones.
//
// Each worker has one; the history and the counters are shared and
// thread-safe. A shard's records move under RunState::shards_moving.
#ifndef CRAWLER_ENGINE_REVISITS_H_
#define CRAWLER_ENGINE_REVISITS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "crawler/config.h"
#include "crawler/fetcher.h"
#include "crawler/warc.h"
#include "engine/counters.h"
#include "engine/placement.h"
#include "engine/recrawl.h"
#include "frontier/frontier.h"
#include "output/history.h"

namespace crawler::engine {

class Revisits {
 public:
  struct Parts {
    const Config& config;
    output::History* history;   // null: [recrawl] off
    output::History* payloads;  // null: dedup.payload off (else the same store)
    Counters& counters;
    const std::atomic<double>& mu;  // the price of freshness (RunState::recrawl_mu)
    Mutex& shards_moving;           // RunState::shards_moving
    const Routing* routing;         // null: a single-machine crawl
  };
  explicit Revisits(const Parts& parts) : p_(parts) {}

  // The history record of a page about to be fetched (none: recrawl off,
  // or its first fetch).
  [[nodiscard]] Result<std::optional<output::HistoryRecord>> Recall(
      const std::string& url) const;
  // What a response is written as: a revisit of the URL's own last capture
  // (a 304, or the same payload), else with dedup.payload one of its
  // payload's first capture at any URL (`page`: not robots.txt); and what
  // the history counts it as. Computes the payload's digest once for it.
  struct Classified {
    VisitKind visit = VisitKind::kOther;
    // Set: a revisit of this capture of the payload, archived before (maybe
    // at another URL); the history's capture is then that one.
    std::optional<output::PayloadCapture> duplicate_of;
    // A payload looked up and not found: written whole, it is the payload's
    // first capture (Stored keeps it).
    bool first_capture = false;
  };
  [[nodiscard]] Classified Classify(const output::HistoryRecord* before,
                                    const FetchResult& r, bool page,
                                    output::Exchange* ex) const;
  // A page's final response, as written (`response_id`, `payload_digest`:
  // its record's; `date`: its WARC-Date): counted if a payload revisit, or
  // kept as its payload's first capture if it is one.
  [[nodiscard]] Status Stored(const FetchResult& r, const Classified& c,
                              std::string_view response_id,
                              std::string_view payload_digest,
                              std::chrono::system_clock::time_point date);

  // A final page result, as written.
  struct Visit {
    const FetchResult& result;
    const frontier::UrlEntry& entry;
    const output::HistoryRecord* before;  // null: its first fetch
    const Classified& classified;
    std::string_view response_id, payload_digest;  // the WARC record's
    std::chrono::system_clock::time_point date;    // its WARC-Date
  };
  // Into the history: the visit counted, the record's validators, capture
  // and next due time. A URL gone long enough leaves the history; *forget
  // is then set, and the caller erases it from the dedup filter.
  [[nodiscard]] Status Remember(const Visit& v, bool* forget);
  // A revisit not fetched (robots, the page cap): due again an interval on.
  [[nodiscard]] Status Postpone(const std::string& url);
  // A cluster node's shards on the move (docs/cluster.md): a takeover's
  // records into the history; on a resume's own restore, the records of the
  // shards other nodes took meanwhile erased (theirs now). REQUIRES:
  // shards_moving held.
  [[nodiscard]] Status Arrive(const ShardState& s);
  // The records of shards given up (sorted) leave the history.
  [[nodiscard]] Status Erase(const std::vector<uint32_t>& shards);

 private:
  [[nodiscard]] Status EraseIf(const std::function<bool(std::string_view)>& pred);

  Parts p_;
};

}  // namespace crawler::engine

#endif  // CRAWLER_ENGINE_REVISITS_H_
