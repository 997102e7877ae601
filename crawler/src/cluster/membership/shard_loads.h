// Shard transfer, the taking side (cluster.h, Death and leave; Handoff):
// the shards whose lease this node took and whose state it must load from
// their source checkpoint (a dead, leaving or giving node's, under
// cluster.shared_dir) before it owns them; the load, on its own thread; and
// the state loaded (or a resumed node's own, Put), waiting for a worker to
// restore it inside a gate pass (Take). The exchange thread drives it (Want,
// Step); workers only Take. What a lease reply means (load, restore, own at
// once) is the caller's (shard_states.h); reading a checkpoint is
// ReadShards below. Unit-tested without Redis (cluster_loads_test.cc).
//
// The rules it keeps:
// - one source checkpoint at a time, all of its wanted shards in one load;
//   a new load starts only once a worker took the last one's state, so at
//   most one shard set's state is in RAM beside the crawl's;
// - a shard `skip` names (given up here and taken back: a worker has not
//   dropped its queue yet) waits;
// - a failed load (the source not readable yet, its node's directory not
//   published) is tried again 2 s later, never dropped: its shards stay
//   wanted, so the crawl is not quiet (Quiet) and cannot end without them;
// - a source that is damaged (no checkpoint of its sequence on its node's
//   disk) falls back to the checkpoint before it (ReadShards); a shard that
//   checkpoint lacks, because its node got the shard after it, is loaded from
//   where that node got it instead (`prev`, kCommitScript's source_prev).
#ifndef CRAWLER_CLUSTER_SHARD_LOADS_H_
#define CRAWLER_CLUSTER_SHARD_LOADS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "cluster/membership/leases.h"
#include "engine/placement.h"

namespace crawler::cluster {

// What a lease newly this process's means for its shard (shard_states.h):
// its state is loaded from a source checkpoint (kLoad: `source`, and `prev`
// should that one be damaged), restored from the checkpoint this node
// resumed from (kRestoreOwn), or it is here already (kReady: a new shard, a
// shard this node has held since it started, or any shard without
// cluster.shared_dir).
struct Gain {
  enum class Action : uint8_t { kLoad, kRestoreOwn, kReady };
  Action action = Action::kReady;
  std::string source, prev;  // kLoad's: "NODE SEQ"
};
// A resumed node's own checkpoint, until Start restored it.
struct ResumedFrom {
  uint64_t sequence = 0;
  std::vector<uint32_t> shards;  // sorted: those it held
};
// `node`: this node; `takeover`: cluster.shared_dir is set; `released`: this
// node gave `shard` up (a handoff) and takes it back; `resumed`: null unless
// this process resumed and has not restored its own yet.
Gain OnGained(uint32_t shard, const LeaseReply& reply, const std::string& node,
              bool takeover, bool released, const ResumedFrom* resumed);

// One load: shards of NODE's checkpoint SEQUENCE, whose OUT is `dir`.
struct ShardLoad {
  std::string dir;
  std::string node;
  uint64_t sequence = 0;
  std::vector<uint32_t> shards;
};

class ShardLoads {
 public:
  using Clock = std::chrono::steady_clock;
  // Reads a load's state (files only; on the load's own thread).
  using Reader = std::function<Result<engine::ShardState>(const ShardLoad&)>;
  // A node's OUT as the others read it (from Redis), or an error.
  using DirOf = std::function<Result<std::string>(const std::string& node)>;

  explicit ShardLoads(Reader reader) : reader_(std::move(reader)) {}
  ~ShardLoads();  // waits for a load that runs
  ShardLoads(const ShardLoads&) = delete;
  ShardLoads& operator=(const ShardLoads&) = delete;

  // `shard` is to load from `source` ("NODE SEQ"); `prev` ("NODE SEQ" or
  // ""): where the source's node got it, should the source be damaged.
  void Want(uint32_t shard, const std::string& source, const std::string& prev);
  bool Wants(uint32_t shard) const { return wanted_.count(shard) > 0; }
  const std::map<uint32_t, std::string>& wanted() const { return wanted_; }

  // A load that ended: its shards and the checkpoint ("NODE SEQ") their
  // state came from (the commit names it, kCommitScript).
  struct Finished {
    std::vector<uint32_t> shards;
    std::string from;
    double seconds = 0;   // the load's time
    uint64_t urls = 0;    // URLs it queued
    double end_unix = 0;  // when it ended
  };
  // One round: a load that ended puts its state for a worker (returned), or
  // on error waits 2 s; with none running, the next source's load starts.
  std::optional<Finished> Step(const DirOf& dir_of,
                               const std::function<bool(uint32_t)>& skip,
                               Clock::time_point now);

  // State for a worker that was not loaded here (a resumed node's own).
  void Put(engine::ShardState state) EXCLUDES(mu_);
  // A worker's, inside a gate pass: the state to restore, once.
  std::optional<engine::ShardState> Take() EXCLUDES(mu_);
  bool Waiting() const { return waiting_.load(); }  // put, not taken yet
  // A load was started and Step has not collected its end (the exchange
  // thread's; tests say "no load started" with it, without waiting).
  bool Loading() const { return running_.valid(); }
  // Nothing wanted, loading or waiting for a worker (the exchange thread's).
  bool Quiet() const { return wanted_.empty() && !Waiting(); }

 private:
  // Shards of `load` with a prev, when its source is damaged: wanted from
  // there (true: nothing loads this round).
  bool LoadElsewhere(const ShardLoad& load);
  // `start`: when it started (for the log); `now`: the round's time.
  std::optional<Finished> Ended(ShardLoad load, Result<engine::ShardState> result,
                                Clock::time_point start, Clock::time_point now);

  const Reader reader_;
  std::map<uint32_t, std::string> wanted_;  // shard -> source "NODE SEQ"
  std::map<uint32_t, std::string> prev_;    // shard -> "NODE SEQ"
  Clock::time_point retry_at_{};
  struct Running {
    ShardLoad load;
    Clock::time_point start;
    Result<engine::ShardState> result =
        Status::Error(Status::Code::kIoError, "not loaded");
  };
  std::future<Running> running_;
  mutable Mutex mu_;
  std::optional<engine::ShardState> state_ GUARDED_BY(mu_);
  std::atomic<bool> waiting_{false};
};

// The crawl's Reader: the shards' hosts, queued URLs, seen records, URL
// history ([recrawl]; its image is unpacked under `history_import`) and the
// source node's outbox, from checkpoint `sequence` of the node whose OUT is
// `load.dir`: its handoff/SEQ/, checkpoint/ or checkpoint.prev/, or, that
// one damaged, the newest older readable one. `shard_of`: a host key's shard.
// `self`: this node's name (the test hook CRAWLER_TEST_TAKEOVER_LOAD_MS,
// "NODE:MS" or "*:MS", makes its loads slow).
Result<engine::ShardState> ReadShards(
    const ShardLoad& load, const std::function<uint32_t(std::string_view)>& shard_of,
    const std::string& history_import, const std::string& self);

// Of a source node's outbox at a cut, what one load sends again: each URL
// goes from one taker only, the one that takes its referrer's shard, if
// the source held that shard at the cut (`held`: the shards of the hosts
// it had URLs queued for, each of which some taker loads from this
// checkpoint when the source is dead; a live source, handing shards over,
// still sends its whole outbox itself). Any other URL goes from every
// taker: one with no referrer (a seed), or whose referrer's shard the
// source did not hold with URLs queued (handed over, drained, or another
// node's page: URLs shipped on for a shard being handed over keep the
// referrer of the node that found them). `want`: the shards this load
// takes. Before, every load sent all of it: a source whose shards went to
// three takers sent its outbox three times, each taker's outbox then held
// it all, and chained takeovers multiplied it (a 4,000-page chaos run with
// 10 kills loaded a 1,436,509-URL outbox, and took 241 s instead of ~60).
// Duplicates are harmless (the owner's filter drops them); a URL no taker
// sends would be lost, which is why `held` is what the cut proves held, not
// every host the source ever had (its host table and frontier keep the
// hosts of shards it handed over).
std::vector<frontier::UrlEntry> SendAgainFrom(
    std::vector<frontier::UrlEntry> outbox, const std::set<uint32_t>& held,
    const std::set<uint32_t>& want,
    const std::function<uint32_t(std::string_view)>& shard_of);

// The directory under a node's OUT that holds checkpoint `sequence`:
// handoff/SEQ/, checkpoint/ or checkpoint.prev/ ("" if none does).
std::string CheckpointOfSequence(const std::string& out, uint64_t sequence);
// When none does because it is damaged (checkpoint/'s MANIFEST unreadable,
// or set aside as checkpoint.damaged/ by a resume): the newest readable one
// of checkpoint/ and checkpoint.prev/ older than `sequence` ("" if none).
std::string OlderThanDamaged(const std::string& out, uint64_t sequence);

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_SHARD_LOADS_H_
