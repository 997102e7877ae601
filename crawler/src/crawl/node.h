// Room crawl/ (docs/architecture.md): a node of a multi-machine job, as the
// crawl sees it, behind an interface so the crawl does not depend on Redis. It is the
// workers' Placement (engine/placement.h), plus what the crawl's Run thread and
// checkpoints need: start, failure, the checkpoint hooks, a resume's restores, its
// figures. The cluster (crawler/src/cluster/, its own CMake target, the only one that
// links hiredis) implements it; the crawl gets one only through a NodeJoiner,
// which the `crawler` command passes in (cli/main.cc). Without one, a config
// with [cluster] redis set is refused.
#ifndef CRAWLER_CRAWL_NODE_H_
#define CRAWLER_CRAWL_NODE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "crawler/checkpoint.h"
#include "crawler/config.h"
#include "engine/placement.h"
#include "report/metrics.h"
#include "report/stats_schema.h"

namespace crawler::crawl {

// Node's parts, split by what calls them: the Run thread's life of the
// node, the checkpointer's hooks, a resume's restores, and the figures the
// report and /metrics read.

// Start, failure, leave: the Run thread's.
class NodeLife {
 public:
  virtual ~NodeLife() = default;
  // Waits until the job has started, then starts the exchange. `local_idle`
  // tells whether this node has nothing to do (called from another thread).
  [[nodiscard]] virtual Status Start(const std::atomic<bool>& stop,
                                     std::function<bool()> local_idle) = 0;
  // Before Start: how the node reads the crawl's backlog (work-aware
  // placement: a busy node weighs its shards by it). `source(f)` calls
  // f(host key, URLs queued, settled) for every host with URLs queued, and
  // returns true; or false if it could not look now (a checkpoint being
  // cut). `settled` is false while the host's robots.txt is being fetched
  // (retries of a 5xx included): its shard cannot be drained for a handoff
  // until the fetch ends. It may be called from another thread, once a
  // heartbeat.
  using HostVisitor = std::function<void(std::string_view, uint64_t, bool)>;
  using BacklogSource = std::function<bool(const HostVisitor&)>;
  virtual void SetBacklogSource(BacklogSource source) = 0;
  // The error that stops this node (it lost a shard, the job is gone), if any.
  virtual bool Failed() const = 0;
  virtual Status failure() const = 0;
  // The failure is a fencing: another node took shards this one held (it
  // was paused or cut off past its lease), from its last committed
  // checkpoint. What it wrote since is void (Crawl::CutBackToCommitted).
  virtual bool Fenced() const = 0;
  // On the way out (SIGTERM): give the shards up once the last checkpoint is
  // committed, so the others take them over at once.
  virtual void LeaveOnStop() = 0;
};

// The checkpointer's hooks. OnCut (gate closed): the outbox, every URL not
// yet durable elsewhere, which the checkpoint holds. OnPublished: `sequence`
// is on disk. A checkpoint is wanted now / none may be cut now.
class CheckpointHooks {
 public:
  virtual ~CheckpointHooks() = default;
  virtual checkpoint::OutboxCut OnCut(uint64_t sequence) = 0;
  virtual void OnPublished(uint64_t sequence) = 0;
  virtual bool CheckpointWanted() const = 0;
  virtual bool CommitPending() const = 0;
  virtual bool HoldCuts() const = 0;
};

// A resume: this node's checkpoint state, restored at Start for the shards
// it still holds; its outbox and spill files, sent again. Errors: a
// malformed file, named.
class NodeRestore {
 public:
  virtual ~NodeRestore() = default;
  virtual void StashOwn(engine::ShardState own) = 0;
  [[nodiscard]] virtual Status RestoreOutbox(const std::string& text,
                                             const std::string& path) = 0;
  [[nodiscard]] virtual Status RestoreSpill() = 0;
};

// Figures: the crawl's own, published with the node's; the node's, for
// stats.json and /metrics.
class NodeFigures {
 public:
  virtual ~NodeFigures() = default;
  virtual void SetCrawlFigures(uint64_t pages, double pages_per_s) = 0;
  virtual report::ClusterReport figures() const = 0;
  virtual report::ClusterHealth health() const = 0;
};

// A node: the workers' Placement and the crawl's four parts.
class Node : public engine::Placement,
             public NodeLife,
             public CheckpointHooks,
             public NodeRestore,
             public NodeFigures {};

// How a crawl whose config sets cluster.redis gets its Node.
struct NodeJoiner {
  // Joins the job. `out_dir`: the crawl's output. `resumed`: a resume.
  // `seeds`: a new crawl's (a job created by this node places its shards by
  // their seed hosts: shard_owners.h).
  std::function<Result<std::unique_ptr<Node>>(const engine::Config& config,
                                              const std::string& out_dir, bool resumed,
                                              const std::vector<std::string>& seeds)>
      join;
  // A resume with cluster.shared_dir: the sequence of this node's last
  // checkpoint the job committed (nullopt: none yet).
  std::function<Result<std::optional<uint64_t>>(const engine::Config& config)>
      last_commit;
};

}  // namespace crawler::crawl

#endif  // CRAWLER_CRAWL_NODE_H_
