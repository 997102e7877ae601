// Room report/ (docs/architecture.md): the crawl's figures as files and
// pages. Every JSON file's schema (stats_schema.h), this file's stats.json
// and series writer, `crawler stats` (crawler/stats_report.h), Prometheus
// /metrics (metrics.h) and the version line. Reads checkpoints, so it sits
// above checkpoint/.
//
// OUT/stats.json (the live stats report, rewritten atomically every 2 s and
// at the end; `crawler stats` reads it) and OUT/stats-series.jsonl (one line
// per refresh, for the report's charts). The JSON fields are documented in
// docs/stats.md.
//
// Used by the crawl's Run thread only (it reads the filter, the frontier and
// the host table without a gate pass: that thread is the one that forks).
#ifndef CRAWLER_STATS_WRITER_H_
#define CRAWLER_STATS_WRITER_H_

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <string>

#include "base/status.h"
#include "browser/pool.h"
#include "crawler/resolver.h"
#include "dedup/filter.h"
#include "engine/counters.h"
#include "engine/host_table.h"
#include "engine/scope.h"
#include "frontier/frontier.h"
#include "report/stats_schema.h"

namespace crawler::report {

class StatsWriter {
 public:
  struct Sources {
    const dedup::Filter& filter;
    const frontier::Frontier& frontier;
    const engine::HostTable& hosts;
    engine::Counters& counters;  // its FPR estimate is refreshed by every Build
    const engine::Resolver* resolver = nullptr;  // null: libcurl resolves
    const engine::Scope* scope = nullptr;        // its host list's bytes ("memory")
    // The workers' waiting robots.txt fetches' bytes (RunState).
    const std::atomic<uint64_t>* robots_waiting_bytes = nullptr;
    const browser::Pool* browser = nullptr;  // null: browser.render = "off"
  };
  static Result<std::unique_ptr<StatsWriter>> Open(const std::string& out,
                                                   const Sources& sources);
  ~StatsWriter();
  StatsWriter(const StatsWriter&) = delete;
  StatsWriter& operator=(const StatsWriter&) = delete;

  // The report now. `elapsed_s`: crawl time over all runs; `spilled_base`:
  // URLs spilled before this run.
  StatsReport Build(bool running, double elapsed_s, uint64_t spilled_base,
                    const checkpoint::CheckpointFigures& checkpoints);
  // Writes stats.json and appends a series line.
  [[nodiscard]] Status Write(const StatsReport& report);
  // The series file's length, flushed (a checkpoint records it).
  [[nodiscard]] Result<uint64_t> SeriesBytes();

 private:
  StatsWriter(std::string out, const Sources& sources, std::FILE* series)
      : out_(std::move(out)), src_(sources), series_(series) {}
  const std::string out_;
  Sources src_;
  std::FILE* series_;
  std::deque<std::pair<frontier::Clock::time_point, uint64_t>>
      rate_samples_;  // pages, last minute
};

}  // namespace crawler::report

#endif  // CRAWLER_STATS_WRITER_H_
