// The receiving side of a cluster node's exchange (cluster.h, Exchange):
// the stream entries of the shards this node holds, from Redis to the
// workers. It owns the inbox (inbox.h: the URLs for the workers and the
// ledger of entries to acknowledge once a checkpoint holds them), the
// doorbell (doorbell.h: when to read), the shards whose pending entries are
// to be claimed and read again, and the reads themselves: new entries
// (kReceiveScript, fenced by each lease's epoch), this node's own pending
// ones (a resumed node's, a chunk a round after a claim), and the reclaim of
// entries left pending for another consumer. Cluster says which shards are
// readable (lease held and valid, state here) and acknowledges (fenced, by
// lease); it knows nothing of leases itself.
//
// The rules it keeps, besides its parts':
// - an entry read goes to the inbox, and is acknowledged only after the
//   inbox says so (inbox.h); a malformed one is counted and skipped, never
//   retried for good;
// - a read whose reply was lost may have delivered entries (now pending for
//   this node): its shards are claimed and read again (Claim), or their
//   URLs are lost and the stream's lag stays stuck for every sender (a chaos
//   run hung on it);
// - a shard's own pending entries are read kPendingChunk entries a round,
//   each read going on from the last ID the previous one took (a dead
//   node's unacknowledged batches read at once, 400,000 URLs, held the
//   exchange thread, and so the heartbeats, for 1.1 s); a shard no longer
//   held leaves that reading (its new owner claims what is pending), one
//   held but not readable now stays.
//
// Thread-safe: Take, Admitted, Empty, Quiet, the checkpoint hooks, Claim and
// Report from any thread; the reads from the exchange thread only. Callers
// may hold their own lock around these (Cluster::mu_ first).
// Unit-tested against a real redis-server (cluster_receiver_test.cc).
#ifndef CRAWLER_CLUSTER_RECEIVER_H_
#define CRAWLER_CLUSTER_RECEIVER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "cluster/exchange/doorbell.h"
#include "cluster/exchange/inbox.h"
#include "cluster/exchange/receive.lua.h"
#include "cluster/exchange/reclaim.lua.h"
#include "cluster/redis/redis.h"
#include "cluster/redis/refusal_backoff.h"
#include "crawler/config.h"
#include "frontier/frontier.h"
#include "report/stats_schema.h"

namespace crawler::cluster {

class Receiver {
 public:
  // Shards readable now, with their leases' epochs: the caller's lease is
  // "NODE EPOCH" (a fenced read of a shard whose lease moved on takes
  // nothing).
  using Shards = Doorbell::Shards;
  // An error reply of `what`: true (the round fails). RedisLink::Failed:
  // a refusal (full, a replica) is waited out, another error logged.
  using ReplyFailed = std::function<bool(const RedisReply&, const char* what)>;
  // Entries a chunked pending read takes of each stream: 16 batches of up to
  // batch_urls URLs (~4,000 at the default 256). 64 took 0.2 s a round
  // while a worker restored a big shard beside it.
  static constexpr uint32_t kPendingChunk = 16;

  // `key`: the job's key of a suffix (Membership::Key).
  Receiver(const engine::ClusterConfig& cfg,
           std::function<std::string(const std::string&)> key, ReplyFailed failed);

  // The workers': the URLs to admit now (the inbox is emptied), then
  // Admitted once they are in the frontier.
  std::vector<frontier::UrlEntry> Take() EXCLUDES(mu_);
  void Admitted() EXCLUDES(mu_);
  bool Empty() const EXCLUDES(mu_);
  // Nothing received and not admitted, no shard to claim or read again.
  bool Quiet() const EXCLUDES(mu_);

  // Checkpoint hooks and the acknowledgements (inbox.h).
  void Cut(uint64_t sequence) EXCLUDES(mu_);
  void Committed(uint64_t sequence, bool last) EXCLUDES(mu_);
  uint64_t committed() const EXCLUDES(mu_);
  bool AwaitingCut() const EXCLUDES(mu_);
  std::vector<StreamEntry> TakeAcks() EXCLUDES(mu_);
  void Retry(std::vector<StreamEntry> entries) EXCLUDES(mu_);

  // `shard`'s entries pending in its stream (any consumer's) become this
  // node's and are read again from the first, at the next ClaimAndRead: a
  // shard taken over, restored, or taken back.
  void Claim(uint32_t shard) EXCLUDES(mu_);
  // urls_received, batches_applied, malformed into `f`.
  void Report(report::ClusterReport* f) const EXCLUDES(mu_);

  // The exchange thread's. False: the connection broke, or an error reply
  // failed the round. *did: entries were taken.
  // New entries of `shards`, when the doorbell says so; *got: how many (the
  // read script marked this node busy).
  bool ReadNew(Redis& redis, const Shards& shards, bool* did, size_t* got);
  // A resumed node's start: all its own pending entries of `shards`.
  bool ReadOwnPending(Redis& redis, const Shards& shards);
  // The shards given to Claim: their pending entries claimed (XAUTOCLAIM);
  // then the next chunk of each shard being read again. `readable`: which
  // of those may be read now (the others wait); `held`: which are still
  // this node's by lease (the others leave).
  bool ClaimAndRead(Redis& redis,
                    const std::function<Shards(const std::vector<uint32_t>&)>& readable,
                    const std::function<bool(uint32_t)>& held, bool* did);
  // Entries of `shards` pending for another consumer longer than `idle`
  // become this node's (kReclaimScript, fenced) and go to the inbox.
  bool Reclaim(Redis& redis, const Shards& shards, std::chrono::milliseconds idle,
               bool* did);
  // After a reconnect: read at the next round whatever the bell says.
  void Reconnected() { bell_.Force(); }
  // The placement's version ("crawler:{JOB}:assign_v", "0" if none) as the
  // last read or look saw it ("" before the first): read with the bell, so
  // a node learns of a give (or any change of owners) within a round, not
  // at its next heartbeat. The exchange thread's.
  const std::string& assign_seen() const { return assign_seen_; }

  // "crawler:{JOB}:s:SHARD" -> SHARD.
  static uint32_t ShardOfStreamKey(std::string_view key);

 private:
  // Was anything sent to this node since its last read of `shards`? One
  // GET instead of a read of every stream.
  bool BellRang(Redis& redis, const Shards& shards);
  // Reads this node's own pending entries of `shards`: all of them, or the
  // next kPendingChunk of each from pending_from_ (`chunked`).
  bool ReadPending(Redis& redis, const Shards& shards, bool chunked, bool* did);
  // A reply that is an error: NOGROUP makes the stream and group it names
  // (else all of `shards`'s) again (true; if Redis refuses, full, those
  // shards wait out create_backoff_); another goes to failed_ (false).
  bool ReadError(Redis& redis, const RedisReply& r, const Shards& shards);
  // `shards` without those whose stream Redis refused to make, while the
  // back-off lasts.
  Shards WithoutUnmade(const Shards& shards) EXCLUDES(mu_);
  // The entries of an XREADGROUP-shaped reply ({{stream, {{id, fields}...}}...})
  // into the inbox; how many.
  size_t ToInbox(ReplyView streams) EXCLUDES(mu_);
  // Every entry pending in `shard`'s stream becomes this node's (XAUTOCLAIM
  // from the start, 10,000 IDs a call). False: the connection broke; an
  // error reply is logged and the shard read as it is.
  bool ClaimPending(Redis& redis, uint32_t shard) EXCLUDES(mu_);
  // After a chunked read of `asked`: each one's last ID read, or none left.
  void PendingRead(const Shards& asked, ReplyView streams) EXCLUDES(mu_);
  std::string StreamKey(uint32_t shard) const {
    return key_("s:" + std::to_string(shard));
  }
  std::string Token(uint64_t epoch) const { return node_ + " " + std::to_string(epoch); }

  const std::function<std::string(const std::string&)> key_;
  const ReplyFailed failed_;
  const std::string node_;
  mutable Mutex mu_;
  Inbox inbox_ GUARDED_BY(mu_);
  std::vector<uint32_t> to_claim_ GUARDED_BY(mu_);
  // Shards whose own pending entries are being read again, a chunk a round:
  // shard -> the last ID read ("0": none yet).
  std::map<uint32_t, std::string> pending_from_ GUARDED_BY(mu_);
  // Shards whose stream (or its group) Redis refused to make: read again
  // once per pause of create_backoff_, not every round. A job started on a
  // full Redis made none, and each round's read met NOGROUP and each make
  // OOM: 22,000 error replies a second from three nodes (measured before
  // this back-off; cluster_test "Cluster: Redis full from the start*").
  std::set<uint32_t> unmade_ GUARDED_BY(mu_);
  RefusalBackoff create_backoff_ GUARDED_BY(mu_);
  LogEvery nogroup_log_ GUARDED_BY(mu_){std::chrono::seconds(30)};
  uint64_t urls_received_ GUARDED_BY(mu_) = 0;
  uint64_t batches_applied_ GUARDED_BY(mu_) = 0;
  uint64_t malformed_ GUARDED_BY(mu_) = 0;
  Doorbell bell_;            // the exchange thread's
  std::string assign_seen_;  // the exchange thread's
};

// The Lua scripts this part runs (redis/redis.h, "Scripts", has the shared rule).
namespace cluster_wire {

// Receive new entries. KEYS: state, delivered, bell:NODE, busy, assign_v,
// then n streams, then their n leases. ARGV: node, count, then per stream
// the caller's "NODE EPOCH". Returns {the bell, XREADGROUP's reply or
// false, the placement's version}: the bell read with the entries, so a
// caller that next finds it unchanged (one GET) knows nothing was sent to
// it since, without reading n streams.
// Counting the delivery and marking this node busy happen atomically with
// it, which is what makes the end test sound. Fenced like acknowledgements:
// a stream is read only while the caller holds its lease with that epoch,
// so a read that reaches Redis late (a node cut off, its command delivered
// after another node took the shard and claimed its pending entries) takes
// nothing: no entry left pending for a consumer that lost the shard.
// kReceiveScript: receive.lua (embedded at build time)

// Reclaim, fenced like reads. KEYS: n streams, then their n leases. ARGV:
// node, min idle ms, count, then per stream the caller's "NODE EPOCH". For
// each stream whose lease the caller holds with that epoch, the entries
// pending for another consumer (one that read them and no longer holds the
// shard: it died or was cut off before it acknowledged) idle longer than
// min idle become the caller's (XCLAIM). The consumers come from XPENDING's
// summary, so a stream with only the caller's pending costs O(consumers).
// Returns, like XREADGROUP, {{stream, entries}...} of the streams that had
// any.
// kReclaimScript: reclaim.lua (embedded at build time)

}  // namespace cluster_wire

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_RECEIVER_H_
