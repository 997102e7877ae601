// The checkpoint room's JSON schemas: MANIFEST.json's (checkpoint.cc writes
// and reads it, with its seal), the crawl's counts' (CrawlCounts:
// MANIFEST.json's "counters" and stats.json's "crawl", described in
// engine/crawl_counts_schema.h, its own room) and the
// checkpointer's figures (stats.json's "checkpoint"); report/stats_schema.h
// builds stats.json on them. A struct per object, described with
// BOOST_DESCRIBE_STRUCT, so boost::json::value_from writes it and
// json_fields::ReadLenient reads it (key = member name). Fields:
// docs/formats.md, docs/stats.md.
#ifndef CRAWLER_CHECKPOINT_MANIFEST_SCHEMA_H_
#define CRAWLER_CHECKPOINT_MANIFEST_SCHEMA_H_

#include <boost/describe.hpp>
#include <boost/json.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "crawler/checkpoint.h"
#include "crawler/crawl_counts.h"
#include "engine/crawl_counts_schema.h"

namespace crawler::checkpoint {

// ---- MANIFEST.json ----

BOOST_DESCRIBE_STRUCT(ManifestFile, (), (bytes, xxh3, from))

// "counters": CrawlCounts and these, flat.
struct ManifestCounts {
  uint64_t started = 0;
  double expected_false_seen = 0;
  uint64_t compactions = 0;  // absent in older manifests: 0
  double compaction_s = 0;
};
BOOST_DESCRIBE_STRUCT(ManifestCounts, (),
                      (started, expected_false_seen, compactions, compaction_s))

struct ManifestWarc {
  uint64_t file_index = 0;
  std::string file;
  uint64_t bytes = 0;
};
BOOST_DESCRIBE_STRUCT(ManifestWarc, (), (file_index, file, bytes))

struct ByteCount {
  uint64_t bytes = 0;
};
BOOST_DESCRIBE_STRUCT(ByteCount, (), (bytes))

struct ByteCounts {
  std::vector<uint64_t> bytes;
};
BOOST_DESCRIBE_STRUCT(ByteCounts, (), (bytes))

struct ManifestDoc {
  std::string format;
  uint64_t version = 0;
  uint64_t sequence = 0;
  double created_unix = 0, elapsed_s = 0;
  std::vector<std::string> scope_hosts;
  boost::json::object counters;  // CrawlCounts + ManifestCounts
  ManifestWarc warc;
  ByteCount fetch_log, stats_series;
  ByteCount seen_log;  // OUT/seen.log (cluster.shared_dir): absent before it
  double pause_ms = 0;
  boost::json::object stats;  // a StatsReport
  std::map<std::string, ManifestFile> files;
  ByteCounts dedup_log;  // per stripe (absent in older manifests: logs are scanned)
};
// clang-format off
BOOST_DESCRIBE_STRUCT(ManifestDoc, (), (format, version, sequence, created_unix, elapsed_s,
    scope_hosts, counters, warc, fetch_log, stats_series, seen_log, pause_ms, stats, files,
    dedup_log))
// clang-format on

// ---- the checkpointer's figures: stats.json's "checkpoint" ----

struct CheckpointFigures {
  uint64_t written = 0, failed = 0, sequence = 0;
  double last_pause_ms = 0, max_pause_ms = 0, last_write_s = 0;
  uint64_t last_bytes = 0;
};
BOOST_DESCRIBE_STRUCT(CheckpointFigures, (),
                      (written, failed, sequence, last_pause_ms, max_pause_ms,
                       last_write_s, last_bytes))

}  // namespace crawler::checkpoint

#endif  // CRAWLER_CHECKPOINT_MANIFEST_SCHEMA_H_
