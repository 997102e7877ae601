// The handoff checkpoints a cluster node keeps (cluster.h, Handoff): a
// checkpoint that is some shard's source (a handoff's, a give's, or the one a
// resumed node restarted from) is copied by hard links into
// OUT/handoff/SEQ/, so the node cuts on while its takers read it, and is
// removed once no shard's source (or source_prev) names it. Files only, no
// Redis: Cluster reads which sequences Redis still names and says so
// (Prune). The exchange thread's (Start's before it); not thread-safe.
// Unit-tested on real files (cluster_kept_test.cc).
//
// The rules it keeps:
// - a copy is built aside (SEQ.tmp/) and renamed into place: a taker never
//   reads half of one; a SEQ.tmp/ left by a crash is removed at the start;
// - one kept by an earlier process of this node is found and kept on;
// - nothing is removed that a source still names.
#ifndef CRAWLER_CLUSTER_KEPT_CHECKPOINTS_H_
#define CRAWLER_CLUSTER_KEPT_CHECKPOINTS_H_

#include <cstdint>
#include <set>
#include <string>

#include "base/status.h"

namespace crawler::cluster {

class KeptCheckpoints {
 public:
  // Finds the copies kept in OUT/handoff/ (and removes SEQ.tmp/ ones).
  explicit KeptCheckpoints(std::string out_dir);

  // Keeps checkpoint `sequence` (checkpoint/, checkpoint.prev/, or kept
  // already). Errors: no checkpoint of that sequence, a copy that failed.
  [[nodiscard]] Status Keep(uint64_t sequence);
  // Removes the copies whose sequence is not in `named`; returns them.
  std::set<uint64_t> Prune(const std::set<uint64_t>& named);
  const std::set<uint64_t>& kept() const { return kept_; }
  bool empty() const { return kept_.empty(); }

 private:
  const std::string out_dir_;
  std::set<uint64_t> kept_;
};

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_KEPT_CHECKPOINTS_H_
