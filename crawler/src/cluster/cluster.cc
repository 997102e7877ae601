// See cluster.h.
#include "cluster/cluster.h"

#include <spdlog/spdlog.h>
#include <xxhash.h>
#include <zlib.h>

#include <algorithm>
#include <boost/json.hpp>
#include <boost/uuid/random_generator.hpp>
#include <boost/uuid/uuid_io.hpp>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>
#include <string_view>

#include "cluster/entry.h"
#include "cluster/membership/cluster_job.h"
#include "cluster/redis/cluster_wire.h"

namespace crawler::cluster {

using namespace cluster_wire;  // NOLINT: this file's own formats

Cluster::Cluster(const engine::Config& config, JoinedJob joined,
                 const std::string& out_dir)
    : cfg_(config.cluster),
      redis_(std::move(joined.address), std::move(joined.redis)),
      job_(std::move(joined)),
      members_(config.cluster.job, config.cluster.node, config.cluster.min_nodes,
               !config.cluster.shared_dir.empty()),
      sender_(
          config.cluster,
          [this](const std::string& suffix) { return members_.Key(suffix); }, out_dir),
      receiver_(
          config.cluster,
          [this](const std::string& suffix) { return members_.Key(suffix); },
          [this](const RedisReply& r, const char* what) {
            return redis_.Failed(r, what);
          }),
      counters_(config.cluster.node, config.cluster.job),
      beats_(
          config.cluster.heartbeat_s,
          std::chrono::milliseconds(static_cast<int64_t>(config.cluster.lease_s * 1000))),
      full_(config.cluster.heartbeat_s),
      states_(config.cluster, job_.seed, out_dir),
      tenure_(
          config.cluster.node, config.cluster.shards,
          std::chrono::milliseconds(static_cast<int64_t>(config.cluster.lease_s * 1000)),
          states_.takeover()),
      handoff_(config.cluster.node, config.cluster.shards, out_dir, states_.ready(),
               receiver_),
      balancer_(cfg_, {members_, tenure_, states_, handoff_, beats_, redis_},
                job_.weights, config.recrawl.enabled) {
  if (config.cluster.ip_politeness) {
    const frontier::FrontierOptions f = config.frontier.Resolved();
    RedisAddress turns_at = redis_.address();
    turns_at.wait_replicas = 0;  // a turn is not worth a replica's round trip
    const auto ms = [](double s) { return static_cast<uint32_t>(s * 1000); };
    turns_ = std::make_unique<AddressTokens>(
        std::move(turns_at), members_.Key(""), config.cluster.node, job_.token,
        AddressTokens::Limits{
            ms(f.min_delay_ip_s), f.max_connections_per_ip,
            ms(config.fetch.timeout_s + config.fetch.connect_timeout_s + 10)},
        config.cluster.turn_timeout_s);
  }
}

Cluster::~Cluster() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

Receiver::Shards Cluster::Readable(const std::vector<uint32_t>& shards) const {
  Receiver::Shards out;
  out.reserve(shards.size());
  for (uint32_t s : shards)
    if (states_.Ready(s) && tenure_.Valid(s))
      out.emplace_back(s, tenure_.leases().epoch(s));
  return out;
}

crawl::NodeJoiner ClusterJoiner(const std::atomic<bool>* stop) {
  crawl::NodeJoiner j;
  j.join =
      [stop](
          const engine::Config& config, const std::string& out_dir, bool resumed,
          const std::vector<std::string>& seeds) -> Result<std::unique_ptr<crawl::Node>> {
    auto node = Cluster::Join(config, out_dir, resumed, seeds, stop);
    if (!node.ok()) return node.status();
    return std::unique_ptr<crawl::Node>(std::move(node).value());
  };
  j.last_commit =
      [stop](const engine::Config& config) -> Result<std::optional<uint64_t>> {
    auto address = ClusterRedisAddress(config.cluster);
    if (!address.ok()) return address.status();
    return ReadLastCommit(*address, config.cluster.job, config.cluster.node, stop);
  };
  return j;
}

Result<std::unique_ptr<Cluster>> Cluster::Join(const engine::Config& config,
                                               const std::string& out_dir, bool resumed,
                                               const std::vector<std::string>& seeds,
                                               const std::atomic<bool>* stop) {
  auto joined = JoinJob(config, out_dir, resumed, seeds, stop);
  if (!joined.ok()) return joined.status();
  return std::unique_ptr<Cluster>(
      new Cluster(config, std::move(joined).value(), out_dir));
}

Status Cluster::Retry(const std::atomic<bool>& stop, const char* what,
                      const std::function<bool()>& step) {
  return redis_.Retry(stop, what, step, [this] {
    receiver_.Reconnected();  // a new connection: read at the next round
    members_.StateUnknown();  // and this node's state written again
  });
}

// Waits until the job has started (cluster.min_nodes have joined), with a
// heartbeat each try; the job's nodes are then members_'s.
Status Cluster::WaitForStart(const std::atomic<bool>& stop) {
  auto last_log = SteadyClock::now() - std::chrono::seconds(10);
  for (;;) {
    Result<RedisReply> r = RedisReply();
    Status st = Retry(stop, "waiting for the job to start", [&] {
      r = redis_->Command(members_.StartCommand());
      return r.ok() && !r->IsError() && Heartbeat();
    });
    if (!st.ok()) return st;
    if (members_.Started(r->view())) return Status::Ok();
    if (stop.load()) return StoppedWhile("waiting for the job to start");  // exit 1
    if (SteadyClock::now() - last_log > std::chrono::seconds(5)) {
      last_log = SteadyClock::now();
      spdlog::info("cluster: waiting for {} nodes to join job {}", cfg_.min_nodes,
                   cfg_.job);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Status Cluster::Start(const std::atomic<bool>& stop, std::function<bool()> local_idle) {
  local_idle_ = std::move(local_idle);
  Status started = WaitForStart(stop);
  if (!started.ok()) return started;
  const std::vector<std::string>& nodes = members_.nodes();
  // The placement over every node of the job (no assign read yet).
  std::set<uint32_t> want(states_.own().shards.begin(), states_.own().shards.end());
  for (uint32_t s : balancer_.Placed(nodes)) want.insert(s);
  tenure_.SetWanted({want.begin(), want.end()});
  counters_.SetNodes(nodes.size());
  // Every stream's group (a shard may come to this node later); where it
  // exists, Redis answers BUSYGROUP, which is fine.
  std::vector<std::vector<std::string>> create;
  for (uint32_t s = 0; s < cfg_.shards; ++s)
    create.push_back({"XGROUP", "CREATE", members_.Key("s:" + std::to_string(s)),
                      "owners", "0", "MKSTREAM"});
  if (states_.takeover())
    create.push_back({"HSET", members_.Key("outdirs"), cfg_.node, job_.out_rel});
  Status st = Retry(stop, "creating the consumer groups",
                    [&] { return redis_->Pipeline(create).ok(); });
  if (!st.ok()) return st;
  if (states_.takeover() && states_.resumed()) {
    // The checkpoint resumed from is the source of every shard it held. The
    // shards this process does not take at once (a node that joined
    // meanwhile has them now, or the lease of one with no hosts left, which
    // is not asked for, is taken later by whoever rendezvous hashing gives
    // it) are loaded from it after this node's next cuts have rotated
    // checkpoint/ away: it is kept in handoff/SEQ/ until no shard's source
    // names it. (A chaos run hung on that: shard 6, with no hosts, held in
    // checkpoint 9, was taken 3 s after the resume, and every try to load it
    // failed with "no checkpoint 9".)
    Status kept = handoff_.Keep(states_.own().sequence);
    if (!kept.ok()) return kept;
  }
  st = Retry(stop, "taking the shards' leases", [&] { return Heartbeat(); });
  if (!st.ok()) return st;
  // The stashed own state of the shards held again, for a worker.
  if (const size_t dropped = states_.RestoreOwn(); dropped > 0)
    spdlog::warn(
        "cluster: {} queued URLs of this node's checkpoint belong to shards other nodes "
        "took over while it was away: left to them",
        dropped);
  std::string names;
  for (const std::string& n : nodes) names += (names.empty() ? "" : ",") + n;
  uint64_t held = 0, max_epoch = 0;
  for (uint32_t s : tenure_.wanted()) {
    held += tenure_.leases().state(s) == Leases::State::kHeld;
    max_epoch = std::max(max_epoch, tenure_.leases().epoch(s));
  }
  spdlog::info(
      "cluster: job {} started with nodes {}; {} owns {} of {} shards, holds {} leases "
      "(epochs up to {})",
      cfg_.job, names, cfg_.node, tenure_.wanted().size(), cfg_.shards, held, max_epoch);
  // A resumed node first re-reads what it was given and has not acknowledged.
  st = Retry(stop, "reading pending entries", [&] {
    return receiver_.ReadOwnPending(*redis_, Readable(tenure_.wanted()));
  });
  if (!st.ok()) return st;
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

uint32_t Cluster::ShardOf(std::string_view host_key) const {
  return states_.ShardOf(host_key);
}

bool Cluster::Owns(std::string_view url) const {
  uint32_t shard = ShardOf(frontier::HostKey(url));
  return states_.Ready(shard) && tenure_.Valid(shard);
}

bool Cluster::Lapsed(std::string_view host_key) const {
  return tenure_.Lapsed(ShardOf(host_key));
}

bool Cluster::GivenAway(std::string_view host_key) const {
  return states_.GivenAway(ShardOf(host_key));
}

bool Cluster::Fetchable(std::string_view host_key) const {
  uint32_t shard = ShardOf(host_key);
  if (states_.Ready(shard) && tenure_.Valid(shard)) return true;
  counters_.Deferred();
  return false;
}

void Cluster::Ship(const std::vector<frontier::UrlEntry>& entries) {
  sender_.Ship(entries, [this](std::string_view host) { return ShardOf(host); });
}

std::vector<frontier::UrlEntry> Cluster::TakeInbox() { return receiver_.Take(); }

void Cluster::Admitted() { receiver_.Admitted(); }

bool Cluster::InboxEmpty() const { return receiver_.Empty(); }

bool Cluster::Quiet() const {
  // Shards taken and not loaded yet, loaded and not restored by a worker,
  // with entries to claim again, being handed over, or given up and not yet
  // taken by their new owner (Transfers::Quiet) are work: a taker
  // that published "idle" while it loaded could let the job end without
  // them, and lose them. (ShardLoads::Quiet is the exchange thread's: Quiet
  // is called from Publish.)
  if (!states_.Quiet()) return false;
  MutexLock lock(mu_);
  return receiver_.Quiet() && sender_.Quiet() && handoff_.Quiet();
}

checkpoint::OutboxCut Cluster::OnCut(uint64_t sequence) {
  checkpoint::OutboxCut out = sender_.Cut(sequence);
  MutexLock lock(mu_);
  // The shards this checkpoint holds (their state is restored here), and
  // the epochs the commit must still find.
  Commits::Held shards;
  for (const auto& [shard, epoch] : tenure_.Holding())
    if (states_.Ready(shard) || handoff_.BeingHanded(shard))
      shards.emplace_back(shard, epoch);
  commits_.Cut(sequence, std::move(shards));
  // Handoffs drained before this cut: this checkpoint is their source.
  handoff_.Cut(sequence);
  receiver_.Cut(sequence);
  return out;
}

bool Cluster::CheckpointWanted() const {
  const auto now = SteadyClock::now();
  const bool full = full_.Due(now);
  MutexLock lock(mu_);
  // Redis full: entries read since the last cut, or cut but waiting for a
  // later commit to be acknowledged (Commit), free Redis's memory only
  // through checkpoints.
  if (full && receiver_.AwaitingCut()) {
    full_.CutAt(now);
    return true;
  }
  return handoff_.CutWanted();
}

void Cluster::GiveUp(uint64_t sequence, const std::vector<uint32_t>& shards) {
  MutexLock lock(mu_);
  std::map<uint32_t, std::string> given_up = tenure_.GiveUp(shards);
  for (uint32_t s : shards) {
    handoff_.GaveUp(s, sequence, given_up[s]);
    commits_.GaveUp(s);
    states_.GaveUp(s);
  }
  counters_.LeasesGivenUp(shards.size());
}

Status Cluster::RestoreOutbox(const std::string& text, const std::string& path) {
  return sender_.RestoreOutbox(text, path,
                               [this](std::string_view host) { return ShardOf(host); });
}

void Cluster::OnPublished(uint64_t sequence) {
  // Acknowledged once committed (Commit, on the exchange thread).
  MutexLock lock(mu_);
  commits_.Published(sequence);
}

bool Cluster::CommitPending() const {
  MutexLock lock(mu_);
  return states_.takeover() && commits_.published() > receiver_.committed();
}

report::ClusterReport Cluster::figures() const {
  report::ClusterReport f = counters_.report();
  sender_.Report(&f);
  receiver_.Report(&f);
  f.shards_given = balancer_.shards_given();
  if (turns_) {
    const AddressTokens::Figures t = turns_->figures();
    f.address_turns = t.granted;
    f.address_waits = t.waits;
    f.address_turns_local = t.local;
    f.address_turns_unused = t.unused;
  }
  return f;
}

void Cluster::ShardsLoaded(const std::vector<uint32_t>& shards) {
  MutexLock lock(mu_);
  for (uint32_t s : shards) {
    states_.Loaded(s);
    receiver_.Claim(s);
    handoff_.TakenBack(s);  // given up once, taken back: this node's again
  }
}

}  // namespace crawler::cluster
