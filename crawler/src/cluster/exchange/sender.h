// The sending side of a cluster node's exchange (cluster.h, Exchange and
// Backpressure): links for other nodes' shards, from Ship to a stream entry
// Redis confirmed. It owns the outbox (outbox.h: batches, the lag limit,
// what a cut keeps), its spill files (spill.h: held URLs past
// cluster.outbox_ram_urls), the lag refresh (every 100 ms, the shards with
// batches waiting) and the back-off after Redis refuses sends (full, a
// replica, cannot persist: RefusalBackoff). Cluster calls it; it knows nothing
// of leases, loads or commits.
//
// The rules it keeps, besides its parts':
// - a URL is in the outbox (RAM, in flight or a spill file) from Ship until
//   Redis confirmed its batch; Quiet is false meanwhile, and a cut (Cut)
//   holds it, so a page counts as done in a checkpoint only once its links
//   are durable (in Redis or in that checkpoint);
// - a batch read back from a spill file is in flight in the outbox before a
//   cut can be taken (spill_mu_ is held from the read to Sending);
// - a batch whose send failed or was refused is held, never dropped (a
//   batch Redis did take is then sent twice: its owner's filter drops it);
// - after a refusal, sends pause (100 ms, doubling to 2 s) and then one
//   batch goes as a probe while the rest wait: all of them, refused one by
//   one at every retry, made 2,839 refused XADDs in 4 s of MISCONF.
//
// Thread-safe: Ship, Quiet, Cut, Committed, RestoreSpill and Report from any
// thread; SendDue, Hold and refusing() from the exchange thread only. Lock
// order: spill_mu_, then mu_; a caller may hold its own lock around Quiet
// (Cluster::mu_ before mu_), never one taken inside these.
// Unit-tested against a real redis-server (cluster_sender_test.cc).
#ifndef CRAWLER_CLUSTER_SENDER_H_
#define CRAWLER_CLUSTER_SENDER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "cluster/exchange/lag.lua.h"
#include "cluster/exchange/outbox.h"
#include "cluster/exchange/send.lua.h"
#include "cluster/exchange/spill.h"
#include "cluster/redis/redis.h"
#include "cluster/redis/refusal_backoff.h"
#include "crawler/checkpoint.h"
#include "crawler/config.h"
#include "frontier/frontier.h"
#include "report/stats_schema.h"

namespace crawler::cluster {

class Sender {
 public:
  using Clock = std::chrono::steady_clock;
  // `key`: the job's key of a suffix (Membership::Key); the spill files go
  // in OUT/cluster-outbox.
  Sender(const engine::ClusterConfig& cfg,
         std::function<std::string(const std::string&)> key, const std::string& out_dir);

  // URLs for their owners: `shard_of` a URL's host key.
  void Ship(const std::vector<frontier::UrlEntry>& entries,
            const std::function<uint32_t(std::string_view)>& shard_of) EXCLUDES(mu_);
  // A resumed node's outbox.txt, shipped again (duplicates are dropped by
  // the owners' filters). Errors: a malformed file, naming `path`.
  [[nodiscard]] Status RestoreOutbox(
      const std::string& text, const std::string& path,
      const std::function<uint32_t(std::string_view)>& shard_of) EXCLUDES(mu_);
  // A resumed node's spill files, taken back as they are (spill.h).
  [[nodiscard]] Status RestoreSpill() EXCLUDES(spill_mu_, mu_);
  // No URL unconfirmed (RAM, in flight, spill files).
  bool Quiet() const EXCLUDES(mu_);
  // Checkpoint `sequence` is cut: outbox.txt's text (every URL in RAM not
  // confirmed) and the spill files to fsync. / It is committed: spill
  // files read back before it are deleted.
  checkpoint::OutboxCut Cut(uint64_t sequence) EXCLUDES(spill_mu_, mu_);
  void Committed(uint64_t sequence) EXCLUDES(spill_mu_);
  // The outbox's figures into `f` (queued, held, on disk, sent, refused).
  void Report(report::ClusterReport* f) const EXCLUDES(spill_mu_, mu_);

  // The exchange thread's. Sends the due batches (all with `flush_all`),
  // pipelined, one kSendScript each; *did when any went. False: the
  // connection broke (the batches are held).
  bool SendDue(Redis& redis, bool flush_all, bool* did) EXCLUDES(spill_mu_, mu_);
  // Redis down or refusing: the due batches are held (spilled past
  // outbox_ram_urls).
  void Hold() EXCLUDES(spill_mu_, mu_);
  // Holds them for `wait` (a 100 ms tick), or until `stop` is set.
  void HoldFor(std::chrono::milliseconds wait, const std::atomic<bool>& stop)
      EXCLUDES(spill_mu_, mu_);
  bool refusing() const { return backoff_.refusing(); }

 private:
  // The batches to send now: the outbox's (Outbox::Select), then batches
  // read back from the spill files of shards with room left.
  std::vector<OutBatch> Select(bool flush_all) EXCLUDES(spill_mu_, mu_);
  void SpillIfOver() EXCLUDES(spill_mu_, mu_);
  // Re-reads the lag of shards with batches waiting (every 100 ms).
  bool RefreshLag(Redis& redis) EXCLUDES(spill_mu_, mu_);
  // The replies to `due` (all of it sent): confirmed or held.
  void Answered(std::vector<OutBatch>& due, const std::vector<RedisReply>& replies)
      EXCLUDES(mu_);
  void Refused(const std::string& error, uint64_t batches) REQUIRES(mu_);
  std::string StreamKey(uint32_t shard) const {
    return key_("s:" + std::to_string(shard));
  }

  const std::function<std::string(const std::string&)> key_;
  const std::string node_;
  const uint64_t ram_urls_;
  mutable Mutex spill_mu_ ACQUIRED_BEFORE(mu_);
  mutable Mutex mu_;
  Outbox outbox_ GUARDED_BY(mu_);
  SpillFiles spill_ GUARDED_BY(spill_mu_);
  uint64_t urls_sent_ GUARDED_BY(mu_) = 0;
  uint64_t batches_sent_ GUARDED_BY(mu_) = 0;
  uint64_t sends_refused_ GUARDED_BY(mu_) = 0;
  std::string blocked_ GUARDED_BY(mu_);  // why the last send was refused
  // The exchange thread's.
  RefusalBackoff backoff_;
  Clock::time_point last_lag_{};
};

// The Lua scripts this part runs (redis/redis.h, "Scripts", has the shared rule).
namespace cluster_wire {

// Send one batch. KEYS: stream, sent, lease:S. ARGV: payload, urls, raw
// length, node, the bells' prefix. Rings the doorbell of the shard's lease
// holder (the counter PREFIX..NODE; kReceiveScript): an owner reads its
// streams only when its bell rang (or at least once a second, for entries
// sent while no lease was held). Returns {batches sent by all nodes, the
// stream's lag}.
// kSendScript: send.lua (embedded at build time)

// The lag of each stream in KEYS.
// kLagScript: lag.lua (embedded at build time)

}  // namespace cluster_wire

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_SENDER_H_
