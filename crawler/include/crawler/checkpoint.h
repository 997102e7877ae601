// Checkpoints: OUT/checkpoint/ (the newest) and OUT/checkpoint.prev/.
//
//   MANIFEST.json  format, sequence, time, counters, scope, WARC / fetch-log /
//                  stats-series lengths at the cut, the stats report at the
//                  cut, and {bytes, xxh3} of every other file. Its last member
//                  is "manifest_xxh3": XXH3-64 (hex) of every byte before that
//                  hex string, so a flipped byte anywhere is caught.
//   config.toml    the effective config (ConfigToToml)
//   dedup.bin      the filter, in the dedup library's own format (dedup/src/format.h)
//   frontier.bin   the frontier's image (frontier/image.h owns the format)
//   hosts.bin      the engine's per-host state (crawler/src/host_table.h owns it)
//   history/       [recrawl] on: the URL history's image (output/history.h),
//                  RocksDB's own files, each listed as "history/NAME"; the
//                  image is taken in the crawl's process at the cut
//                  (RocksDB's Checkpoint API: a flush and hard links) and
//                  moved in by the writer
//   outbox.txt     a cluster node's links for other nodes not yet confirmed by
//                  Redis at the cut (crawler/src/cluster.h owns it; optional)
//   spill-N.q      a host's spilled frontier URLs: a hard link to the crawl's
//                  own spill file, of which the range frontier.bin's 'F'
//                  record names is the checkpoint's (the manifest's entry
//                  has "from" and hashes the range only). The crawl may
//                  append past the range after the cut; nothing ever changes
//                  the range (a resume copies it out, frontier/image.h).
//
// Writing (WriteCheckpoint): everything goes to OUT/checkpoint.tmp/, each
// file is fsynced as it is closed, then the directory; then checkpoint/
// becomes checkpoint.prev/ and checkpoint.tmp/ becomes checkpoint/ (two
// atomic exchanges), and OUT is fsynced. A crash at any moment leaves
// checkpoint/ and checkpoint.prev/ each complete (a crash between the
// exchanges swapped: RepairCutPublish). A written checkpoint is never
// modified again (a spill link's range included).
//
// OUT/dedup/stripe-NNNNN.hlog, beside the checkpoints: the filter's hash log
// (dedup/src/hash_log.h), fsynced before the manifest. The stripes saved in
// dedup.bin count its entries, and a resumed crawl cuts it back to them.
//
// Loading (LoadCheckpoint) verifies the manifest's own checksum, then every
// file's size and checksum while reading it; any problem rejects the whole
// checkpoint with one message naming the file and what is wrong.
#ifndef CRAWLER_CHECKPOINT_H_
#define CRAWLER_CHECKPOINT_H_

#include <boost/json.hpp>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "crawler/crawl_counts.h"
#include "dedup/filter.h"
#include "frontier/frontier.h"
#include "frontier/image.h"

namespace crawler::checkpoint {

inline constexpr const char* kCheckpointDir = "checkpoint";
inline constexpr const char* kCheckpointPrevDir = "checkpoint.prev";
// A damaged checkpoint/, set aside by a resume that fell back to
// checkpoint.prev/.
inline constexpr const char* kCheckpointDamagedDir = "checkpoint.damaged";
inline constexpr const char* kCheckpointTmpDir = "checkpoint.tmp";
// Written by Crawl::Create before anything else (the seeds in scope, then the
// effective config): a crawl stopped before checkpoint 1 starts again from them.
inline constexpr const char* kStartSeeds = "start-seeds.txt";
inline constexpr const char* kStartConfig = "start-config.toml";
inline constexpr const char* kDedupLogDir = "dedup";
// The URL history's image taken at a cut, until the writer moves it into
// checkpoint.tmp/history/.
inline constexpr const char* kHistoryCutDir = "history.cut";

// What the manifest records besides the files.
struct CheckpointInfo {
  uint64_t sequence = 0;
  double elapsed_s = 0;  // crawl time so far (over all runs)
  std::string config_toml;
  std::vector<std::string> scope_hosts;
  engine::CrawlSummary summary;
  uint64_t started = 0;  // page fetches started (max_pages), in-flight ones included
  engine::DedupCarried dedup;  // over all runs up to this cut
  // Each dedup stripe's hash log length at the cut (0: none), so a resume
  // cuts the logs without reading them (Filter::StartLog).
  std::vector<uint64_t> dedup_log_bytes;
  uint32_t warc_index = 0;
  std::string warc_file;  // name inside OUT/warc/
  uint64_t warc_bytes = 0;
  uint64_t fetch_log_bytes = 0;
  uint64_t series_bytes = 0;    // OUT/stats-series.jsonl
  uint64_t seen_log_bytes = 0;  // OUT/seen.log (a cluster node with shared_dir)
  double pause_ms = 0;          // the workers' pause for this cut
  boost::json::object stats;    // the stats report at the cut
};

// A cluster node's outbox at a cut: outbox.txt's text, and the spill files
// that hold the rest (crawler/src/cluster.h).
struct OutboxCut {
  std::string text;
  std::vector<std::string> spill_files;
};

struct CheckpointSources {
  const dedup::Filter* filter = nullptr;
  const frontier::Frontier* frontier = nullptr;
  // Writes hosts.bin's contents (the engine's host table) to the FILE.
  std::function<Status(std::FILE*, const std::string& path)> write_hosts;
  std::string outbox;  // outbox.txt's contents (a cluster node's; else empty)
  bool has_outbox = false;
  // A cluster node's spill files (OUT/cluster-outbox/) that hold the rest of
  // its outbox (and their directory): fsynced before the manifest (a file gone
  // meanwhile was sent).
  std::vector<std::string> outbox_spill;
  frontier::Clock::time_point cut{};
  int fsync_fd_warc = -1;  // fsynced before the checkpoint becomes visible
  int fsync_fd_log = -1;
  int fsync_fd_seen = -1;
  int slow_ms = 0;  // test hook: sleep this long after each file
  // [recrawl] on: the history's image (OUT/history.cut/), moved to
  // TMP/history/ and hashed file by file ("": none).
  std::string history_image;
};

struct CheckpointWritten {
  uint64_t bytes = 0;
  double seconds = 0;
};

// Writes and publishes a checkpoint of OUT. Uses only the sources given (it
// runs in a forked child: no logging, and only locks that are never held
// outside the checkpoint gate; see crawler/src/gate.h).
// REQUIRES: nothing changes the filter and the frontier meanwhile (a forked
// child's frozen copy, or the end of a crawl).
Result<CheckpointWritten> WriteCheckpoint(const std::string& out,
                                          const CheckpointInfo& info,
                                          const CheckpointSources& sources);

struct LoadedCheckpoint {
  std::string dir;
  CheckpointInfo info;
  std::string config_path;  // DIR/config.toml (verified)
  std::unique_ptr<dedup::Filter> filter;
  frontier::FrontierImage frontier;
  std::string
      hosts_bin;       // hosts.bin's bytes (checksum verified; HostTable::Decode parses)
  std::string outbox;  // outbox.txt's bytes, if the checkpoint has one (verified)
  std::string history_dir;  // DIR/history, if the checkpoint has one (verified)
};

// Loads and verifies DIR (a checkpoint directory). Errors (kCorruption,
// kNotFound, kIoError) name the file and the problem. Without `with_filter`,
// dedup.bin is not read (a cluster node taking shards over reads their part
// of the seen set from the node's seen.log instead).
Result<LoadedCheckpoint> LoadCheckpoint(const std::string& dir, bool with_filter = true);

// MANIFEST.json: written (EncodeManifest) and read (DecodeManifest) here,
// side by side. The text is sealed by its last member, "manifest_xxh3".
struct ManifestFile {
  uint64_t bytes = 0;
  std::string xxh3;  // 16 hex digits
  // A spill file's range starts here (the file may have grown past it: the
  // crawl appends to it after the cut); bytes and xxh3 are the range's.
  uint64_t from = 0;
};
struct Manifest {
  CheckpointInfo info;
  std::map<std::string, ManifestFile> files;
};
std::string EncodeManifest(const CheckpointInfo& info,
                           const std::map<std::string, ManifestFile>& files);
// Verifies the seal, the format and the version, then reads the fields;
// errors name `path`.
Result<Manifest> DecodeManifest(std::string_view text, const std::string& path);

// Reads and verifies DIR/MANIFEST.json only, as JSON (for `crawler stats`).
Result<boost::json::object> ReadManifest(const std::string& dir);

// A publish cut between its two exchanges leaves OUT/checkpoint/ older than
// OUT/checkpoint.prev/: swaps them back (*repaired then true). Anything
// else, a damaged manifest included, is left for the loader to judge.
Status RepairCutPublish(const std::string& out, bool* repaired);

}  // namespace crawler::checkpoint

#endif  // CRAWLER_CHECKPOINT_H_
