// Work-aware placement (cluster.h, Balance; issue 31): which of a busy
// node's shards it hands to a node that ran out of work. Pure logic, no
// Redis; unit-tested without it (cluster_parts_test.cc).
//
// Rendezvous hashing spreads shards evenly, but not the work in them: hosts
// differ in size, and on 200 hosts one of 3 nodes got 79. The crawl then
// ends when the unluckiest node does. So a node whose queued URLs would
// keep it busy for a while (at its own rate of the last minute) gives the
// heaviest of its shards, up to half its backlog, to an idle node, through
// the handoff a join uses (drained, cut into a checkpoint, taken over).
// A shard is the unit moved: a shard heavier than half the backlog stays
// (moving it only moves the problem), and so does a backlog a handoff
// would not pay for (fewer than `min_queued` URLs, or under `min_s` of work,
// or under min_queued / 2 URLs that fit in the half).
#ifndef CRAWLER_CLUSTER_BALANCE_H_
#define CRAWLER_CLUSTER_BALANCE_H_

#include <algorithm>
#include <cstdint>
#include <vector>

namespace crawler::engine {

struct ShardBacklog {
  uint32_t shard = 0;
  uint64_t queued = 0;  // URLs queued for the shard's hosts here
};

struct BalanceRule {
  uint64_t min_queued = 50;  // a smaller backlog is not worth a handoff
  // Nor one this node ends in less than this. 6-node bench
  // (docs/benchmarks.md), three runs each: 8 s 4.98-5.31x one node, 4 s
  // 5.19-5.49x, 2 s 4.93-5.41x (more, smaller gives, each a checkpoint).
  double min_s = 4;
};

// The shards to give: heaviest first, each one taken while the total given
// stays at most half the backlog. `pages_per_s`: this node's recent rate (0:
// not known yet, nothing is given).
inline std::vector<uint32_t> ShardsToGive(std::vector<ShardBacklog> backlog,
                                          double pages_per_s, const BalanceRule& rule) {
  uint64_t total = 0;
  for (const ShardBacklog& b : backlog) total += b.queued;
  if (total < rule.min_queued || pages_per_s <= 0 ||
      static_cast<double>(total) / pages_per_s < rule.min_s)
    return {};
  std::sort(backlog.begin(), backlog.end(),
            [](const ShardBacklog& a, const ShardBacklog& b) {
              return a.queued != b.queued ? a.queued > b.queued : a.shard < b.shard;
            });
  std::vector<uint32_t> give;
  uint64_t given = 0;
  for (const ShardBacklog& b : backlog) {
    if (b.queued == 0) break;
    if (given + b.queued > total / 2) continue;
    give.push_back(b.shard);
    given += b.queued;
  }
  if (given < rule.min_queued / 2) return {};  // not worth a handoff either
  return give;
}

}  // namespace crawler::engine

#endif  // CRAWLER_CLUSTER_BALANCE_H_
