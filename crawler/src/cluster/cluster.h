// Room cluster/ (docs/architecture.md): everything that speaks to Redis:
// this node (join, ownership, the URL exchange, leases, takeover, handoff,
// spill), `crawler cluster-stats` and the hiredis client (redis.h). Its own
// CMake target, crawler::cluster, the only one that links hiredis. No file
// outside this room includes its headers but cli/main.cc (entry.h); the
// engine reaches a Cluster only as a Node (crawl/node.h).
//
// Cluster is the glue: the Node interface (cluster.cc) and the exchange
// thread's round (cluster_exchange.cc). What it decides it asks of its
// parts, each with its rules in its header and its own unit tests
// (docs/architecture.md lists them): sender.h (the sending side: outbox.h,
// spill.h and the back-off after refusals), receiver.h (the receiving
// side: inbox.h, doorbell.h, the reads, claims and reclaims), tenure.h (the
// shards wanted and held, the fenced acknowledgements: leases.h),
// handoff.h (the giving side of a shard's transfer: transfer.h, the
// checkpoints kept for takers in kept_checkpoints.h), shard_states.h (the
// shards' state here and the taking side: shard_loads.h, own_state.h for a
// resumed node's own state until Start), commits.h, membership.h (join,
// start, state, end test, leave), balancer.h (the members read, the shards
// wanted, work-aware giving: shard_owners.h, balance.h), heartbeats.h (when
// the heartbeat is due), node_counters.h (the figures) and redis_link.h
// (the connection, its loss and Redis's refusals).
//
// One node of a crawl shared by several machines through Redis ([cluster]).
//
// Ownership. host -> shard = XXH3-64(host key, job seed) mod shards; shard ->
// node by the placement over the job's live nodes (shard_owners.h:
// rendezvous hashing with bounded loads by seed hosts), unless the hash
// assign names a live node for the shard: work-aware placement (balance.h,
// balancer.h) gives a busy node's heaviest shards to the least
// loaded node, through the handoff a join uses. The job seed and the shard count are
// fixed in Redis when the job is created. A host's URLs, robots.txt,
// politeness and page cap live on its owner only, so per-host politeness
// holds across the cluster with no shared lock, and each node keeps its own
// dedup filter (no seen set in Redis).
//
// Membership. A node joins with a Lua script that also refuses a config
// whose [crawl], [url], [dedup] or [recrawl] differs from the job's (naming
// the keys; crawl.max_duration_s is each node's own),
// a different shard count, and a second live node of the same name
// (liveness: a key with a TTL of 3 heartbeats). The crawl starts when
// cluster.min_nodes nodes have joined. Without cluster.shared_dir the node
// set is then frozen, and a new name is refused ("closed"); with it a new
// node joins the running job and the shards it is given are handed over to
// it (HandoffWork, handoff.h).
//
// Death and leave (shard_states.h). Without cluster.shared_dir a node
// that dies keeps its shards until it comes back with --resume. With it,
// every checkpoint a node publishes is committed in Redis, fenced (each of
// its shards must still be this node's with the same epoch), and becomes
// each shard's source: the checkpoint a taker loads the shard from. Ownership
// is by lease: each node wants the shards rendezvous hashing gives it among
// the live nodes, and takes a free lease of one whose last holder died or
// left (takeover); it loads that shard's hosts, queued URLs and seen set
// (seen_log.h) from the source checkpoint under shared_dir, sends the source
// node's outbox again, claims the shard's pending stream entries (XAUTOCLAIM)
// and only then admits, reads and fetches for it. A node that finds a shard
// it held taken by another (it was paused or cut off past its lease) stops
// with an error: its work since its last committed checkpoint is void (the
// taker redoes it). SIGTERM is a graceful leave: the last checkpoint is
// committed and the leases given up, so the others take over at once.
//
// Exchange. A link whose host another node owns goes into that shard's
// batch (Ship); the exchange thread sends a batch when it has
// cluster.batch_urls URLs or is cluster.batch_ms old: one XADD per batch
// (zlib-compressed lines "url \t depth \t redirects \t referrer"), pipelined.
// It reads its own shards' streams through the consumer group "owners"
// (XREADGROUP) into the inbox when its doorbell rang (each send rings its
// shard's lease holder's; doorbell.h says when it reads anyway), which the
// workers admit like any link: the
// filter drops what the node has seen, so a batch delivered twice is
// harmless. Entries are acknowledged (XACK) and trimmed (XTRIM MINID, never
// MAXLEN) only after a checkpoint that contains their effect is published;
// after a crash, a resumed node re-reads its pending entries first.
//
// The end. Each node writes idle or busy when it changes (and at every
// heartbeat); a read that takes entries marks its node busy in the same
// script, and the job's counters sent and delivered count batches. An idle
// node tests for the end: O(1) first (sent == delivered and one random busy
// node dead), then, only if that cannot tell, every node idle or dead with
// no shard (kDoneScript), which marks the job done.
//
// Backpressure (sender.h: outbox.h, spill files: spill.h). Every send returns
// the stream's lag (its entries the owner has not read yet). A shard whose lag reached
// cluster.max_lag_batches gets no more batches from this node: they wait in
// RAM (held), and past cluster.outbox_ram_urls held URLs, on disk in
// OUT/cluster-outbox/SHARD-N.txt (immutable files of outbox lines), until the
// lag falls (re-read every 100 ms). Redis memory stays bounded by shards x
// max_lag_batches entries however slow an owner is.
//
// Leases (fencing; the table: leases.h). Each owned shard has a lease in
// Redis, lease:S = "NODE EPOCH" with a TTL of cluster.lease_s, renewed at every
// heartbeat; its epoch only grows (a new one at every taking). Every acknowledge and trim
// of a shard's stream is one Lua script that first checks the caller's "NODE EPOCH"
// against the lease: a node that lost it (paused, partitioned, a zombie) is refused, logs
// it and counts it (acks_fenced). A node fetches a host only while it holds its shard's
// lease by its own clock (renewal sent less than lease_s ago); past that it logs "lease
// expired", stops fetching those hosts (their URLs wait in the frontier) and stops
// reading their streams, until a renewal succeeds. An expired lease nobody else took is
// taken again with a new epoch; one another node holds is lost.
//
// Redis lost mid-crawl: the node keeps crawling its own shards (for up to
// cluster.lease_s, then it waits for Redis), holds its
// outbound batches the same way (RAM, then disk), retries with back-off and
// reports "redis: down N s".
//
// Crash safety of the outbox: a checkpoint's outbox.txt holds every URL not
// yet confirmed by Redis that is in RAM; the spill files hold the rest and
// are fsynced by the checkpoint writer. A resumed node re-sends both (the
// owners' filters drop what was sent twice). A spill file read back is
// deleted only after a later checkpoint is published.
//
// Thread-safe. Ship/TakeInbox are called by workers inside a gate pass (they
// take only this object's mutex, which the forked checkpoint writer never
// touches).
#ifndef CRAWLER_CLUSTER_H_
#define CRAWLER_CLUSTER_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "cluster/address_tokens.h"
#include "cluster/exchange/receiver.h"
#include "cluster/exchange/sender.h"
#include "cluster/fate.h"
#include "cluster/handoff/balancer.h"
#include "cluster/handoff/handoff.h"
#include "cluster/membership/commits.h"
#include "cluster/membership/heartbeats.h"
#include "cluster/membership/leases.h"
#include "cluster/membership/membership.h"
#include "cluster/membership/node_counters.h"
#include "cluster/membership/shard_states.h"
#include "cluster/membership/tenure.h"
#include "cluster/redis/log_every.h"
#include "cluster/redis/redis.h"
#include "cluster/redis/redis_link.h"
#include "crawl/node.h"
#include "crawler/checkpoint.h"
#include "crawler/config.h"
#include "engine/host_table.h"
#include "frontier/frontier.h"
#include "frontier/image.h"
#include "output/seen_log.h"
#include "report/stats_schema.h"

namespace crawler::cluster {

class Cluster final : public crawl::Node {
 public:
  // Connects and joins the job. Errors: Redis unreachable (kIoError, naming
  // the address), a refusal (kInvalidArgument, naming the reason).
  // `out_dir`: the crawl's output (the spill files go in OUT/cluster-outbox).
  // `resumed`: Redis may be restarting too; it is waited for (a minute).
  // `seeds`: a new crawl's; if this node creates the job, their hosts per
  // shard become the job's placement weights (shard_owners.h). A set `stop`
  // (a signal before the node runs) ends the join's waits (JoinJob).
  static Result<std::unique_ptr<Cluster>> Join(const engine::Config& config,
                                               const std::string& out_dir, bool resumed,
                                               const std::vector<std::string>& seeds = {},
                                               const std::atomic<bool>* stop = nullptr);
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Waits until the job has started (cluster.min_nodes nodes joined), then
  // fixes the ownership and starts the exchange thread. `local_idle` tells
  // whether this node has nothing to do (called from the exchange thread).
  [[nodiscard]] Status Start(const std::atomic<bool>& stop,
                             std::function<bool()> local_idle) override;
  void SetBacklogSource(BacklogSource source) override {
    balancer_.SetBacklogSource(std::move(source));
  }

  // After Start: does this node own `url`'s host? (It holds the lease of its
  // shard, by its own clock, and has its state loaded.)
  bool Owns(std::string_view url) const override;
  // After Start: may this node fetch `host_key`'s URLs now? False while it
  // does not own the host's shard.
  bool Fetchable(std::string_view host_key) const override;
  uint32_t ShardOf(std::string_view host_key) const override;
  bool Lapsed(std::string_view host_key) const override;
  bool GivenAway(std::string_view host_key) const override;

  // Takeover (shard_states.h): the state of shards taken over from a
  // dead or leaving node, for a worker to restore (inside a gate pass), then
  // ShardsLoaded. The error that stops this node (a shard it held was taken
  // by another node), if any.
  std::optional<engine::ShardState> TakeShardState() override { return states_.Take(); }
  void ShardsLoaded(const std::vector<uint32_t>& shards) override EXCLUDES(mu_);
  bool Failed() const override { return fate_.failed(); }
  bool Fenced() const override { return fate_.fenced(); }
  // With shared_dir: a published checkpoint is not committed yet. No new one
  // is cut meanwhile: the committed one (a taker's source) must stay on disk
  // as checkpoint.prev/, which the next publish would replace.
  bool CommitPending() const override EXCLUDES(mu_);
  Status failure() const override { return fate_.status(); }
  // On the way out (SIGTERM): after the last checkpoint is committed, give
  // the leases up so the other nodes take the shards over at once.
  void LeaveOnStop() override { leave_ = true; }
  // A resumed node with shared_dir: its checkpoint's frontier and hosts,
  // restored at Start only for the shards it still holds (the others were
  // taken over meanwhile: their new owners have them).
  void StashOwn(engine::ShardState own) override { states_.StashOwn(std::move(own)); }

  // Handoff (a node joined the job, or came back): a shard held here that
  // rendezvous hashing over the live nodes now gives another node is handed
  // over. 1. It is no longer owned (links for its hosts go to its stream,
  // its hosts are not fetched, its stream is not read); 2. a worker reports
  // it drained (no page or robots.txt fetch of its hosts in flight), inside
  // a gate pass; 3. a checkpoint is cut (CheckpointWanted) and committed:
  // the shard's source; 4. its lease is given up, the other node takes it
  // over from that checkpoint, and a worker drops its queued URLs here.
  // That checkpoint is kept (hard links) in OUT/handoff/SEQ/ until no
  // shard's source names it any more (its new owners committed), so this
  // node cuts on meanwhile; it cuts none between the handoff's cut and that
  // copy (HoldCuts: one exchange round after the commit).
  // The part that does it: handoff.h.
  bool HandoffWork() const override { return handoff_.Work(); }
  // Shards waiting to be drained (at most every 100 ms; else none).
  std::vector<uint32_t> Draining() override { return handoff_.Draining(); }
  void Drained(const std::vector<uint32_t>& shards) override { handoff_.Drained(shards); }
  // Shards given up: their queued URLs to drop now, then Dropped.
  std::vector<uint32_t> TakeReleased() override { return handoff_.TakeDrops(); }
  void Dropped(const std::vector<uint32_t>& shards, uint64_t urls) override {
    handoff_.Dropped(shards, urls);
  }
  // Is `url`'s shard being handed over (its URLs go to its stream)?
  bool Handing(std::string_view url) const override {
    return handoff_.Handing(ShardOf(frontier::HostKey(url)));
  }
  // A checkpoint is wanted now: for a handoff; or Redis is full (a node's
  // sends were refused, flagged in Redis: the key "full") and entries read
  // here since the last cut wait for one to be acknowledged and trimmed,
  // which frees Redis's memory (at most every 2 s).
  bool CheckpointWanted() const override EXCLUDES(mu_);
  bool HoldCuts() const override { return handoff_.HoldCuts(); }

  // Queues URLs for their owners (none of them may be this node's).
  void Ship(const std::vector<frontier::UrlEntry>& entries) override EXCLUDES(mu_);
  // Received URLs, to admit now (the inbox is emptied); call Admitted when
  // they are in the frontier (until then the node is not idle).
  std::vector<frontier::UrlEntry> TakeInbox() override EXCLUDES(mu_);
  void Admitted() override EXCLUDES(mu_);
  bool InboxEmpty() const override EXCLUDES(mu_);
  // Nothing queued to send, nothing received unapplied, no shard being
  // loaded, restored, claimed again or handed over. The exchange thread's.
  bool Quiet() const EXCLUDES(mu_);

  // The job is over (every node idle, every batch applied).
  bool Done() const override { return members_.done(); }

  // Politeness per address over the job (address_tokens.h); with
  // cluster.ip_politeness off, every turn is granted at once.
  engine::AddressTurn StartAt(std::string_view address, uint64_t who) override {
    return turns_ ? turns_->Start(address, who) : engine::AddressTurn{true, 0, false, {}};
  }
  void EndAt(std::string_view address, uint64_t token) override {
    if (turns_) turns_->End(address, token);
  }

  // Checkpoint hooks: `sequence` cut (gate closed) / published. OnCut
  // returns the outbox (outbox.txt): every URL queued or in flight to
  // another node, not yet confirmed by Redis. The rule it keeps: a page
  // counts as done in a checkpoint only once its links are durable, in
  // Redis or in that checkpoint.
  // Also names the spill files the checkpoint writer must fsync.
  checkpoint::OutboxCut OnCut(uint64_t sequence) override EXCLUDES(mu_);
  // A resumed node's outbox, queued to be sent again (duplicates are
  // dropped by the owners' filters). Errors: a malformed file.
  [[nodiscard]] Status RestoreOutbox(const std::string& text,
                                     const std::string& path) override;
  // A resumed node's spill files, taken back as they are (a torn last line,
  // written after the last checkpoint, is cut off). Errors: a malformed file.
  [[nodiscard]] Status RestoreSpill() override { return sender_.RestoreSpill(); }
  void OnPublished(uint64_t sequence) override EXCLUDES(mu_);

  report::ClusterReport figures() const override;
  // Read at every heartbeat: owned shards' lag, the heartbeat's round trip.
  report::ClusterHealth health() const override { return counters_.health(); }
  // The crawl's own figures, published with the node's (cluster-stats).
  void SetCrawlFigures(uint64_t pages, double pages_per_s) override {
    counters_.SetCrawl(pages, pages_per_s);
  }

 private:
  Cluster(const engine::Config& config, JoinedJob joined, const std::string& out_dir);
  // Those of `shards` readable now (state here, lease valid by this node's
  // clock), with their leases' epochs: what the receiver reads.
  Receiver::Shards Readable(const std::vector<uint32_t>& shards) const;
  void Loop();
  // One round of the exchange thread; false: the connection broke.
  bool Round(bool* did_something);
  // Renews the owned shards' leases (takes them at Start) in the same
  // pipeline as the liveness key, the node's figures and the lag.
  bool Heartbeat();
  // `incarnation` (the job's meta field, read back) is not this job's:
  // Redis lost it (restarted empty) or is another server. Fails the node
  // naming it (JobLost, exit 2) and returns true.
  bool JobGone(ReplyView incarnation);
  // The heartbeat's lease replies, sent at `sent` (Tenure::Apply), and what
  // the round means for the node: its figures; a lease lost stops it.
  void ApplyLeases(ReplyView r, std::chrono::steady_clock::time_point sent) EXCLUDES(mu_);
  // Handoff (handoff.h, HandOver): `shards`, handed over in checkpoint
  // `sequence`, are given up here: not renewed, not asked for, in no
  // later cut.
  void GiveUp(uint64_t sequence, const std::vector<uint32_t>& shards) EXCLUDES(mu_);
  // Loads the shards taken from their sources (ShardStates::StepLoads), a
  // round's step; where NODE's OUT is on shared_dir is in Redis (outdirs).
  void LoadTaken();
  // Start: waits until the job has started and fills nodes_.
  Status WaitForStart(const std::atomic<bool>& stop);
  // Commits the newest published checkpoint (fenced); then acknowledges.
  bool Commit();
  bool Release();
  // RedisLink::Retry, Start's; a new connection is read at the next round
  // and this node's state written again.
  Status Retry(const std::atomic<bool>& stop, const char* what,
               const std::function<bool()>& step);

  const engine::ClusterConfig cfg_;
  // The exchange thread's connection (Join's, then Start's, before it), its
  // loss, reconnects and refusals (redis_link.h).
  RedisLink redis_;
  // What the join brought (its connection is redis_'s): this process's
  // token, the job's seed, its incarnation (each heartbeat checks it, so a
  // node whose Redis lost its data stops, exit 2, instead of crawling on),
  // OUT relative to shared_dir (published for takers), the weights.
  const JoinedJob job_;

  // The job's nodes, this node's state in Redis, the end test (the
  // exchange thread's; Start's before it; done() any thread's).
  Membership members_;
  std::function<bool()> local_idle_;

  // The sending side: the outbox, its spill files, the back-off after
  // refusals (sender.h). Its own locks, taken after mu_ (Quiet) or alone.
  Sender sender_;
  // The receiving side: the inbox and its entries' ledger, the doorbell,
  // the shards to claim and read again (receiver.h). Its own lock, taken
  // after mu_ or alone.
  Receiver receiver_;
  mutable Mutex mu_;
  NodeCounters counters_;  // its own lock
  // Turns at addresses, on a connection of its own (the worker threads ask);
  // null: cluster.ip_politeness off.
  std::unique_ptr<AddressTokens> turns_;

  std::atomic<bool> stop_{false}, leave_{false};
  Fate fate_;  // why this node stops (fate.h)
  // The exchange thread's.
  std::chrono::steady_clock::time_point last_state_{}, last_reclaim_{};
  // When heartbeats are due: 4x as often while shards this node wants are
  // not held yet (Want; heartbeats.h).
  Heartbeats beats_;
  // Redis flagged full, as the heartbeats saw it: a cut is wanted
  // (CheckpointWanted; heartbeats.h).
  mutable FullFlag full_;
  // The shards' state here: ready, given away, loading, a resumed node's
  // own (shard_states.h).
  ShardStates states_;
  // The shards wanted and held, their leases (tenure.h): the exchange
  // thread's (Start's before it); workers read only their validity
  // (Fetchable, Lapsed), a cut the epochs held (Holding).
  Tenure tenure_;
  // Commits (commits.h): the shards (and epochs) each cut holds, what is
  // published and committed, where each shard's state came from.
  Commits commits_ GUARDED_BY(mu_);
  // Handoff (see HandoffWork): the shards being given away, the workers'
  // flags, the checkpoints kept for their takers (handoff.h).
  Handoffs handoff_;
  // Where the shards are: the members, the shards wanted, work-aware giving
  // (balancer.h). The exchange thread's.
  Balancer balancer_;
  std::thread thread_;
};

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_H_
