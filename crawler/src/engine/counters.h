// The crawl's figures (CrawlSummary) and the expected count of URLs wrongly
// taken as seen, shared by every worker. Thread-safe: one mutex, held for a
// few additions at a time.
#ifndef CRAWLER_COUNTERS_H_
#define CRAWLER_COUNTERS_H_

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_set>

#include "base/mutex.h"
#include "crawler/crawl_counts.h"
#include "crawler/fetcher.h"

namespace crawler::engine {

class Counters {
 public:
  // A response (any status) or a failed fetch.
  void Fetched(const FetchResult& r) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (r.status == 0) {
      ++summary_.failed;
      ++summary_.errors[FetchErrorName(r.error)];
      return;
    }
    ++summary_.fetched;
    summary_.bytes += r.body.size();
    if (r.truncated) {
      ++summary_.truncated;
      ++summary_.errors[FetchErrorName(FetchError::kTooLarge)];
    }
    long c = r.status / 100;
    (c == 2   ? summary_.status_2xx
     : c == 3 ? summary_.status_3xx
     : c == 4 ? summary_.status_4xx
              : summary_.status_5xx)++;
    (c == 2   ? summary_.bytes_2xx
     : c == 3 ? summary_.bytes_3xx
     : c == 4 ? summary_.bytes_4xx
              : summary_.bytes_5xx) += r.body.size();
  }
  // A history record's interval moved from bucket `from` to `to` ("": none,
  // for a URL entering or leaving the history), its demand (micro-hertz)
  // from `from_uhz` to `to_uhz`.
  void MoveInterval(const std::string& from, const std::string& to, uint64_t from_uhz,
                    uint64_t to_uhz) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    summary_.revisit_demand_uhz += to_uhz;
    summary_.revisit_demand_uhz -= std::min(from_uhz, summary_.revisit_demand_uhz);
    if (from == to) return;
    auto it = summary_.revisit_intervals.find(from);
    if (!from.empty() && it != summary_.revisit_intervals.end() && --it->second == 0)
      summary_.revisit_intervals.erase(it);
    if (!to.empty()) ++summary_.revisit_intervals[to];
  }
  void Add(uint64_t CrawlSummary::*field, uint64_t n = 1) EXCLUDES(mu_) {
    if (n == 0) return;
    MutexLock lock(mu_);
    summary_.*field += n;
  }

  // A URL a trap guard or a domain budget kept out, by reason.
  void Guarded(const char* reason, uint64_t n = 1) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    summary_.guarded[reason] += n;
  }
  // A URL lost (CrawlCounts::lost) to a failure of `kind`.
  void Lost(const char* kind) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    ++summary_.lost[kind];
  }
  // A host whose robots.txt had no answer after its retries.
  void LostHost(const char* kind) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    ++summary_.lost_hosts[kind];
  }
  // True the first time `host` has a URL skipped for `reason` (then it is
  // logged). At most kMaxSkipLogged pairs are remembered: past them (a
  // spam farm's endless hosts) nothing more is logged, and that is said once.
  bool FirstSkip(const std::string& host, const char* reason) EXCLUDES(mu_) {
    const uint64_t key =
        std::hash<std::string>()(host) * 31 + std::hash<std::string_view>()(reason);
    MutexLock lock(mu_);
    if (skip_logged_.size() >= kMaxSkipLogged) {
      if (!skip_log_full_)
        spdlog::info("{} hosts' skipped URLs logged: no more are", kMaxSkipLogged);
      skip_log_full_ = true;
      return false;
    }
    return skip_logged_.insert(key).second;
  }

  CrawlSummary Summary() const EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return summary_;
  }
  // The dedup figures of the processes before this one, restored from the
  // checkpoint. The filter counts this process's own (FilterStats); the
  // report adds the two.
  DedupCarried Carried() const EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return carried_;
  }
  uint64_t PagesDone() const EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return summary_.fetched + summary_.failed;
  }
  // Sets the whole summary (resume, and the end of a run).
  void Restore(const CrawlSummary& s, const DedupCarried& carried) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    summary_ = s;
    carried_ = carried;
  }

 private:
  mutable Mutex mu_;
  CrawlSummary summary_ GUARDED_BY(mu_);
  DedupCarried carried_ GUARDED_BY(mu_);
  static constexpr size_t kMaxSkipLogged = 100'000;
  std::unordered_set<uint64_t> skip_logged_ GUARDED_BY(mu_);
  bool skip_log_full_ GUARDED_BY(mu_) = false;
};

}  // namespace crawler::engine

#endif  // CRAWLER_COUNTERS_H_
