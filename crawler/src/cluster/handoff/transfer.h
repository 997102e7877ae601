// Shard transfer, the giving side (cluster.h, Handoff): the state machine of
// the shards this node hands over to another live node (one that joined,
// came back, or ran out of work), from the moment it stops owning them
// until their new owner holds them. Pure logic, no Redis and no files:
// Handoffs (handoff.h) drives it from the exchange thread, the workers
// and the checkpoint hooks. Not thread-safe: Handoffs guards it with its
// mutex. Unit-tested without Redis (cluster_transfer_test.cc).
//
// A shard goes:
//   Begin: draining (its links go to its stream, its hosts wait; a worker
//     reports no fetch of them in flight) -> Drained -> drained (a
//     checkpoint is wanted: CutWanted) -> Cut(N) -> cut (in checkpoint N; no
//     other cut until it is kept: HoldCuts) -> Committed(N or later) lists
//     it -> GaveUp: its lease to give up in Redis (ToRelease, ReleasesSent),
//     released (N is its source until the new owner commits its own:
//     SourceIs), untaken (until the new owner holds the lease:
//     HolderIs), to drop (its queued URLs, by a worker: TakeDrops, Dropped).
// A handoff cancelled before the lease is given up (the new owner went
// away) leaves the shard here (Cancel). A shard given up and taken back is
// this node's again (TakenBack).
// The crawl is not over while any shard is in any of these states (Quiet):
// its URLs would stay in the handoff checkpoint. Untaken counts too: the new
// owner is marked busy as it takes the lease, but an idle taker learns of a
// shard given to it a heartbeat or two after it is given up.
#ifndef CRAWLER_CLUSTER_TRANSFER_H_
#define CRAWLER_CLUSTER_TRANSFER_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace crawler::cluster {

class Transfers {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts handing `shard` over to `to`: true if it was not being handed
  // over (else only its destination changes).
  bool Begin(uint32_t shard, const std::string& to);
  // Keeps `shard` here: the node it was going to, if it was being handed.
  std::optional<std::string> Cancel(uint32_t shard);
  // Being handed over (not given up yet).
  bool Handing(uint32_t shard) const { return handoff_.count(shard) > 0; }
  // Shards waiting to be drained (at most every 100 ms; else none: a worker
  // scans the hosts for each answer).
  std::vector<uint32_t> Draining(Clock::time_point now);
  void Drained(const std::vector<uint32_t>& shards);
  // A drained shard waits for a checkpoint.
  bool CutWanted() const;
  // A handoff's checkpoint is cut and not kept yet: no other cut.
  bool HoldCuts() const;
  // Checkpoint `sequence` is cut: the drained shards are in it.
  void Cut(uint64_t sequence);
  // The shards cut in a checkpoint up to `committed`, by checkpoint;
  // `*to`: one of their destinations (the log's).
  std::map<uint64_t, std::vector<uint32_t>> Committed(uint64_t committed,
                                                      std::string* to) const;
  // `shard` is given up here, in checkpoint `sequence`, its lease `lease`
  // ("NODE EPOCH") given up in Redis next.
  void GaveUp(uint32_t shard, uint64_t sequence, const std::string& lease);
  // The leases given up here and not yet in Redis (shard, "NODE EPOCH"), in
  // the order given up: sent until Redis confirms (each release deletes a
  // lease only while it is still this node's with that epoch, so one sent
  // twice is harmless); ReleasesSent(n): the first n were confirmed.
  const std::vector<std::pair<uint32_t, std::string>>& ToRelease() const {
    return to_release_;
  }
  void ReleasesSent(size_t n);

  // Given up: its queued URLs to drop now (by a worker), then Dropped.
  std::vector<uint32_t> TakeDrops();
  void Dropped(const std::vector<uint32_t>& shards);
  bool Dropping(uint32_t shard) const;

  // Given up in a checkpoint its new owner has not replaced yet.
  bool Released(uint32_t shard) const { return released_.count(shard) > 0; }
  std::vector<uint32_t> ReleasedShards() const;
  // `source` ("NODE SEQ") is `shard`'s source now: the release is over
  // once it is not this node's (`self`) handoff checkpoint.
  void SourceIs(uint32_t shard, const std::string& source, const std::string& self);
  // Given up, and no node has taken the lease yet.
  std::vector<uint32_t> UntakenShards() const;
  // `holder` ("NODE EPOCH", or "") holds `shard`'s lease now.
  void HolderIs(uint32_t shard, const std::string& holder);
  // Given up once and taken back (loaded again): this node's.
  void TakenBack(uint32_t shard);

  // Work for the workers: shards to drain or to drop.
  bool Work() const { return !handoff_.empty() || !to_drop_.empty(); }
  // A handoff is under way: no shards are given to another node meanwhile.
  bool Giving() const { return !handoff_.empty() || !untaken_.empty(); }
  // Nothing being handed over, dropped, or waiting for its taker.
  bool Quiet() const {
    return handoff_.empty() && to_drop_.empty() && dropping_.empty() && untaken_.empty();
  }

 private:
  enum class Phase : uint8_t { kDraining, kDrained, kCut };
  struct Handoff {
    Phase phase = Phase::kDraining;
    uint64_t sequence = 0;  // kCut: the checkpoint that holds the shard
    std::string to;
  };
  std::map<uint32_t, Handoff> handoff_;
  std::map<uint32_t, uint64_t> released_;    // shard -> its handoff checkpoint
  std::map<uint32_t, std::string> untaken_;  // shard -> "NODE EPOCH" given up
  std::vector<std::pair<uint32_t, std::string>> to_release_;  // in Redis next
  std::vector<uint32_t> to_drop_;                             // for a worker
  std::set<uint32_t> dropping_;                               // taken by a worker
  Clock::time_point last_drain_{};
};

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_TRANSFER_H_
