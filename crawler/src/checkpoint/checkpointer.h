// Room checkpoint/ (docs/architecture.md): the checkpoint files, their
// manifest and loaders (crawler/checkpoint.h, checkpoint.cc) and this
// file's Checkpointer, which decides when to cut and forks the writer.
// Includes output/ and engine/ (and report/'s stats writer: a cut writes
// stats.json from the same figures).
//
// When and how a running crawl takes its checkpoints (the files themselves:
// crawler/checkpoint.h).
//
// Triggers: checkpoint.interval_s, checkpoint.interval_pages, a request
// (SIGUSR1), and the end of Run. A cut: close the gate (gate.h; waits for the
// units under way), flush the fetch log, the WARC and the stats series and
// record their lengths, describe the crawl (counters, scope, config), then
// fork(): the child writes OUT/checkpoint.tmp/ from its copy-on-write image and
// publishes it, the parent reopens the gate at once and reaps the child later
// (Poll). Under ASan and TSan the writer runs in-process (GCC 12's sanitizer
// allocators can deadlock a child forked while other threads allocate).
//
// A checkpoint that cannot be written is an output failure: Cut and Poll
// return it, and the crawl stops (exit 1) with the last good checkpoint intact.
//
// Used by the crawl's Run thread only.
#ifndef CRAWLER_CHECKPOINTER_H_
#define CRAWLER_CHECKPOINTER_H_

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>

#include "base/status.h"
#include "checkpoint/manifest_schema.h"
#include "crawler/checkpoint.h"
#include "crawler/config.h"
#include "crawler/warc.h"
#include "engine/gate.h"
#include "engine/host_table.h"
#include "output/fetch_log.h"
#include "output/history.h"
#include "output/seen_log.h"

namespace crawler::checkpoint {

class Checkpointer {
 public:
  struct Parts {
    engine::Gate& gate;
    dedup::Filter& filter;  // its hash log is flushed at each cut
    frontier::Frontier& frontier;
    const engine::HostTable& hosts;
    output::FetchLog& log;
    output::WarcWriter& warc;
    // Fills the crawl's part of the manifest (counters, scope, config, time,
    // stats report, the stats series' length; `running`: taken while the
    // workers run) at the cut, gate closed. An error (the series cannot be
    // flushed) fails the cut.
    std::function<Status(CheckpointInfo*, bool running)> describe;
    // Optional: checkpoint `sequence` was cut (gate closed; returns the
    // outbox.txt to write, if any) / published.
    std::function<std::optional<OutboxCut>(uint64_t sequence)> on_cut;
    std::function<void(uint64_t sequence)> on_published;
    const output::SeenLog* seen = nullptr;  // a cluster node's with shared_dir
    // [recrawl] on: its image is taken at the cut, in this process (Prepare).
    output::History* history = nullptr;
  };
  // `sequence`: of the last checkpoint written (0 for a new crawl).
  Checkpointer(std::string out, const engine::CheckpointConfig& config,
               const Parts& parts, uint64_t sequence);
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Is a periodic checkpoint due? (Never while one is being written.)
  bool Due(uint64_t pages_done, bool requested) const;
  // Takes a cut; `fork_writer` = false writes in-process with the workers
  // stopped or not yet started (seeding, the end of Run).
  [[nodiscard]] Status Cut(bool fork_writer, uint64_t pages_done);
  // Reaps a finished writer (`wait`: waits for it). Its failure is returned.
  [[nodiscard]] Status Poll(bool wait);
  const CheckpointFigures& figures() const { return figures_; }

 private:
  Status Prepare(CheckpointInfo* info, CheckpointSources* src, bool running);
  Status Fork(const CheckpointInfo& info, const CheckpointSources& src,
              frontier::Clock::time_point t0);
  void Written(uint64_t bytes, double seconds, const char* how);

  const std::string out_;
  const engine::CheckpointConfig config_;
  Parts p_;
  CheckpointFigures figures_;
  frontier::Clock::time_point last_ = frontier::Clock::now();
  uint64_t last_pages_ = 0;
  int slow_ms_ = 0;   // CRAWLER_CHECKPOINT_SLOW_MS (tests)
  pid_t child_ = -1;  // the writer running, if any
  int child_pipe_ = -1;
};

}  // namespace crawler::checkpoint

#endif  // CRAWLER_CHECKPOINTER_H_
