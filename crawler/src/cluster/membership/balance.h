// Work-aware placement (cluster.h, Balance): which of a busy
// node's shards it hands to the least loaded live node. Pure logic, no
// Redis; unit-tested without it (cluster_parts_test.cc).
//
// The placement spreads the seed hosts evenly, but not the work in them:
// hosts differ in size, and the crawl ends when the unluckiest node does.
// Every node publishes its load (URLs queued for the shards it holds) at
// each heartbeat, and a node gives the heaviest of its shards, up to half
// the gap between its load and the least loaded node's, to that node,
// through the handoff a join uses (drained, cut into a checkpoint, taken
// over). An idle node has load 0: the gap is the whole backlog, and half of
// it moves. A busy taker gets work only when the gap is a good part of the
// giver's load (`min_gap`): a give costs a drain and a checkpoint, and the
// loads are a heartbeat old. A shard is the unit moved: a shard heavier
// than the half stays (moving it only moves the problem), and so does a
// backlog a handoff would not pay for (fewer than `min_queued` URLs, or
// under `min_s` of work, or under min_queued / 2 URLs that fit in the half).
#ifndef CRAWLER_CLUSTER_BALANCE_H_
#define CRAWLER_CLUSTER_BALANCE_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace crawler::cluster {

struct ShardBacklog {
  uint32_t shard = 0;
  uint64_t queued = 0;  // URLs queued for the shard's hosts here
  // A host of it has its robots.txt being fetched: the shard stays (its
  // handoff would wait for the fetch, retries included, and hold every
  // give after it).
  bool pinned = false;
};

struct BalanceRule {
  uint64_t min_queued = 50;  // a smaller backlog is not worth a handoff
  // Nor one this node ends in less than this. 6-node bench
  // (docs/benchmarks.md), three runs each, when a give took a heartbeat or
  // two to land: 8 s 4.98-5.31x one node, 4 s 5.19-5.49x, 2 s 4.93-5.41x
  // (more, smaller gives, each a checkpoint). Landing in ~0.55 s
  // (Balancer::Seen), six runs each at 50 ms a response: 4 s 19.5-21.1 s
  // (mean 20.3), 2 s 19.3-20.3 (19.7), 1 s 19.2-19.9 (19.6); at 150 ms,
  // three each: 4 s 53.6-54.1 s, 2 s 53.1-54.4.
  double min_s = 2;
  // A taker with work of its own gets shards only when the gap is at least
  // this share of the giver's backlog. 6-node bench (docs/benchmarks.md):
  // with gives to idle nodes alone, 30 s into a run the busiest node had
  // 1,429 URLs queued and the least busy 570, and nothing moved until a
  // node ran dry. 25% until 2026-12-04: the six then ended with the
  // busiest node 5% over a fair share of the pages (3,271 against 3,109,
  // a second of work at 50 ms); with 10%, a give every heartbeat and a
  // taker reserved for one (Balancer::Balance), 2.7% (3,192), and the run
  // 0.26 s sooner (24 alternating pairs, faster in 17;
  // scripts/balance_sim.py, the model, had said ~0.3 s).
  double min_gap = 0.1;
};

// The shards to give a node with `their_load` URLs queued (0: idle):
// heaviest first, each one not pinned taken while the total given stays at
// most half the gap between the two loads. `pages_per_s`: this node's recent rate (0:
// not known yet, nothing is given).
inline std::vector<uint32_t> ShardsToGive(std::vector<ShardBacklog> backlog,
                                          double pages_per_s, uint64_t their_load,
                                          const BalanceRule& rule) {
  uint64_t total = 0;
  for (const ShardBacklog& b : backlog) total += b.queued;
  if (total < rule.min_queued || pages_per_s <= 0 ||
      static_cast<double>(total) / pages_per_s < rule.min_s || their_load >= total)
    return {};
  const uint64_t gap = total - their_load;
  if (static_cast<double>(gap) < rule.min_gap * static_cast<double>(total) ||
      gap < rule.min_queued)
    return {};
  std::sort(backlog.begin(), backlog.end(),
            [](const ShardBacklog& a, const ShardBacklog& b) {
              return a.queued != b.queued ? a.queued > b.queued : a.shard < b.shard;
            });
  std::vector<uint32_t> give;
  uint64_t given = 0;
  for (const ShardBacklog& b : backlog) {
    if (b.queued == 0) break;
    if (b.pinned || given + b.queued > gap / 2) continue;
    give.push_back(b.shard);
    given += b.queued;
  }
  if (given < rule.min_queued / 2) return {};  // not worth a handoff either
  return give;
}

// This node's pages per second for ShardsToGive: over the last 5 s or more
// once known, else the last minute's (the crawl's figure). The last
// minute's lags behind a node whose rate fell (its fast hosts given away,
// the slow ones left), and would have it keep a backlog of minutes.
class RecentRate {
 public:
  using Clock = std::chrono::steady_clock;
  // At `now` the crawl has fetched `pages`, `minute_rate` per second over
  // the last minute. A count that went back (a new process) starts anew.
  double At(Clock::time_point now, uint64_t pages, double minute_rate) {
    if (at_ == Clock::time_point{} || pages < pages_) {
      at_ = now;
      pages_ = pages;
    } else if (now - at_ >= std::chrono::seconds(5)) {
      rate_ = static_cast<double>(pages - pages_) /
              std::chrono::duration<double>(now - at_).count();
      at_ = now;
      pages_ = pages;
    }
    return rate_ > 0 ? rate_ : minute_rate;
  }

 private:
  Clock::time_point at_{};
  uint64_t pages_ = 0;
  double rate_ = 0;
};

// The most a taker may have queued for a give from a node with `total`
// URLs queued to still pay (ShardsToGive's gap rules): the give script
// checks it against the taker's load as Redis has it when the give lands.
inline uint64_t MaxTakerLoad(uint64_t total, const BalanceRule& rule) {
  const double gap = std::max(rule.min_gap * static_cast<double>(total),
                              static_cast<double>(rule.min_queued));
  return static_cast<double>(total) > gap ? total - static_cast<uint64_t>(gap) : 0;
}

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_BALANCE_H_
