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

#include "cluster/cluster_job.h"
#include "cluster/cluster_wire.h"
#include "cluster/entry.h"

namespace crawler::engine {

using namespace cluster_wire;  // NOLINT: this file's own formats

Cluster::Cluster(const Config& config, RedisAddress address, std::unique_ptr<Redis> redis,
                 std::string token, uint64_t seed, std::string out_dir)
    : cfg_(config.cluster),
      min_nodes_(config.cluster.min_nodes),
      address_(std::move(address)),
      token_(std::move(token)),
      seed_(seed),
      redis_(std::move(redis)),
      owners_(config.cluster.shards),
      outbox_(config.cluster.shards, config.cluster.batch_urls,
              std::chrono::milliseconds(config.cluster.batch_ms),
              config.cluster.max_lag_batches),
      bell_(std::chrono::milliseconds(std::max<uint32_t>(config.cluster.batch_ms, 50)),
            std::chrono::seconds(5)),
      leases_(
          config.cluster.node, config.cluster.shards,
          std::chrono::milliseconds(static_cast<int64_t>(config.cluster.lease_s * 1000))),
      takeover_(!config.cluster.shared_dir.empty()),
      continuous_(config.recrawl.enabled),
      ready_(new std::atomic<bool>[config.cluster.shards]),
      handing_(new std::atomic<bool>[config.cluster.shards]),
      out_dir_(out_dir),
      spill_dir_(std::move(out_dir) + "/cluster-outbox") {
  figures_.node = cfg_.node;
  figures_.job = cfg_.job;
  for (uint32_t s = 0; s < cfg_.shards; ++s) {
    ready_[s] = false;
    handing_[s] = false;
  }
  // Handoff checkpoints kept by an earlier process of this node: removed
  // once no shard's source names them (PruneHandoffDirs).
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(
           out_dir_ + "/" + cluster_wire::kHandoffDir, ec)) {
    const std::string name = e.path().filename().string();
    uint64_t seq = 0;
    auto [end, err] = std::from_chars(name.data(), name.data() + name.size(), seq);
    if (err == std::errc() && end == name.data() + name.size())
      handoff_dirs_.insert(seq);
    else
      std::filesystem::remove_all(e.path(), ec);  // a copy cut short (SEQ.tmp)
  }
}

Cluster::Health Cluster::health() const {
  MutexLock lock(mu_);
  return health_;
}

void Cluster::SetCrawlFigures(uint64_t pages, double pages_per_s) {
  MutexLock lock(mu_);
  figures_.pages = pages;
  figures_.pages_per_s = pages_per_s;
}

Cluster::~Cluster() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::string Cluster::Key(const std::string& suffix) const {
  return "crawler:{" + cfg_.job + "}:" + suffix;
}
std::string Cluster::StreamKey(uint32_t shard) const {
  return Key("s:" + std::to_string(shard));
}
uint32_t Cluster::ShardOfStreamKey(std::string_view key) {
  uint32_t shard = 0;
  std::string_view num = key.substr(key.rfind(':') + 1);
  std::from_chars(num.data(), num.data() + num.size(), shard);
  return shard;
}

NodeJoiner ClusterJoiner() {
  NodeJoiner j;
  j.join = [](const Config& config, const std::string& out_dir, bool resumed,
              const std::vector<std::string>& seeds) -> Result<std::unique_ptr<Node>> {
    auto node = Cluster::Join(config, out_dir, resumed, seeds);
    if (!node.ok()) return node.status();
    return std::unique_ptr<Node>(std::move(node).value());
  };
  j.last_commit = [](const Config& config) -> Result<std::optional<uint64_t>> {
    auto address = ParseRedisUrl(config.cluster.redis);
    if (!address.ok()) return address.status();
    return ReadLastCommit(*address, config.cluster.job, config.cluster.node);
  };
  return j;
}

namespace {

// With shared_dir: OUT relative to it, where the others find this node's
// checkpoints. Errors: OUT is not inside shared_dir.
Result<std::string> OutUnderShared(const ClusterConfig& c, const std::string& out_dir) {
  if (c.shared_dir.empty()) return std::string();
  std::error_code ec;
  auto shared = std::filesystem::weakly_canonical(c.shared_dir, ec);
  auto out = std::filesystem::weakly_canonical(out_dir, ec);
  std::string rel = out.lexically_relative(shared).string();
  if (ec || !std::filesystem::is_directory(shared) || rel.empty() ||
      rel.rfind("..", 0) == 0 || rel == ".") {
    return Status::Error(Status::Code::kInvalidArgument,
                         "cluster.shared_dir: --out " + out_dir +
                             " must be a directory inside " + c.shared_dir +
                             " (an existing directory every node can read)");
  }
  return rel;
}

// The join script's refusals ("shards", "config", "closed", or an unknown
// verdict), as the error that names what differs. ("duplicate" waits.)
Status JoinRefusal(const ClusterConfig& c, const std::string& verdict,
                   const std::string& detail, const std::string& config_json) {
  if (verdict == "shards")
    return Refused(c.job, "it has " + detail + " shards, this node is configured with " +
                              std::to_string(c.shards) + " (cluster.shards)");
  if (verdict == "config")
    return Refused(c.job, "this node's config differs from the job's: " +
                              DifferingKeys(config_json, detail));
  if (verdict == "closed")
    return Refused(c.job, "it has started with the nodes " + detail + " and node '" +
                              c.node +
                              "' is not one of them (a node joins a running job only "
                              "with cluster.shared_dir, where the shards it takes "
                              "over are read from)");
  return Refused(c.job, "unexpected answer " + verdict);
}

// What a join sends, besides the node's name and the job's keys.
struct JoinRequest {
  std::string token = boost::uuids::to_string(boost::uuids::random_generator()());
  std::string incarnation = boost::uuids::to_string(boost::uuids::random_generator()());
  uint64_t seed_candidate = 0;
  std::string config_json, config_hash;
  std::string weights;  // EncodeWeights
};

JoinRequest MakeJoinRequest(const Config& config, const std::vector<std::string>& seeds) {
  JoinRequest j;
  std::random_device rd;
  j.seed_candidate = (uint64_t{rd()} << 32) | rd();
  // The seed hosts per shard under this seed (the job's, if this node
  // creates it): each host once.
  std::vector<uint32_t> weights(config.cluster.shards, 0);
  std::set<std::string_view> hosts;
  if (config.cluster.place_by_seeds) {
    for (const std::string& s : seeds) {
      std::string_view host = frontier::HostKey(s);
      if (!hosts.insert(host).second) continue;
      weights[ShardOfHost(host, j.seed_candidate, config.cluster.shards)] += 1;
    }
  }
  j.weights = EncodeWeights(weights);
  j.config_json = JobConfigJson(config);
  j.config_hash = Hex64(XXH3_64bits(j.config_json.data(), j.config_json.size()));
  return j;
}

}  // namespace

Result<std::unique_ptr<Cluster>> Cluster::Join(const Config& config,
                                               const std::string& out_dir, bool resumed,
                                               const std::vector<std::string>& seeds) {
  const ClusterConfig& c = config.cluster;
  auto address = ParseRedisUrl(c.redis);
  if (!address.ok()) return address.status();
  auto out_rel = OutUnderShared(c, out_dir);
  if (!out_rel.ok()) return out_rel.status();
  // A new crawl fails at once on a wrong address; a resumed node waits.
  auto redis = Redis::ConnectWaiting(*address, 5, resumed ? 60 : 0);
  if (!redis.ok())  // at start: a setup error (exit 2), not an output failure
    return Status::Error(Status::Code::kInvalidArgument,
                         "cluster.redis: " + redis.status().message());
  if (Status st = CheckRedisSettings(**redis, *address); !st.ok()) return st;
  auto mine = ReadJobIdentity(out_dir);
  if (!mine.ok()) return mine.status();
  if (mine->job != c.job) *mine = JobIdentity{};  // another job's record: not this one's
  const JoinRequest req = MakeJoinRequest(config, seeds);
  auto prefix = "crawler:{" + c.job + "}:";
  auto ttl_ms = std::to_string(static_cast<int64_t>(c.heartbeat_s * 3000));
  // A node resumed after a crash finds its old liveness key: wait for it to
  // expire (3 heartbeats); a node that is really alive keeps it fresh.
  auto deadline = SteadyClock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(c.heartbeat_s * 4000));
  for (;;) {
    auto r = (*redis)->Command(
        {"EVAL", kJoinScript, "4", prefix + "meta", prefix + "nodes", prefix + "started",
         prefix + "alive:" + c.node, c.node, req.token, std::to_string(c.shards),
         std::to_string(req.seed_candidate), req.config_hash, req.config_json, ttl_ms,
         c.shared_dir.empty() ? "0" : "1", mine->incarnation, req.incarnation,
         req.weights});
    if (!r.ok()) {
      // Reachable a moment ago: Redis restarting. Reconnect for up to a minute.
      if (SteadyClock::now() > deadline + std::chrono::seconds(60)) return r.status();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      auto again = Redis::Connect(*address, 2);
      if (again.ok()) redis.value() = std::move(again).value();
      continue;
    }
    if (r->IsError() && r->Str().rfind("LOADING", 0) == 0 &&
        SteadyClock::now() < deadline + std::chrono::seconds(60)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // reading its AOF
      continue;
    }
    if (r->IsError())
      return Status::Error(Status::Code::kIoError,
                           "redis " + address->Text() + ": join: " + r->Str());
    std::string verdict = RedisReply::StrOf(Element(r->raw(), 0));
    std::string detail = RedisReply::StrOf(Element(r->raw(), 1));
    if (verdict == "missing" || verdict == "incarnation")
      return JobLost(verdict, detail, *mine, *address);
    if (verdict == "ok") {
      uint64_t seed = 0;
      std::from_chars(detail.data(), detail.data() + detail.size(), seed);
      JobIdentity joined{c.job, RedisReply::StrOf(Element(r->raw(), 2)), seed};
      if (mine->incarnation.empty() && !joined.incarnation.empty())
        if (Status st = WriteJobIdentity(out_dir, joined); !st.ok()) return st;
      spdlog::info("cluster: node {} joined job {} at {}", c.node, c.job,
                   address->Text());
      auto cluster = std::unique_ptr<Cluster>(new Cluster(
          config, *address, std::move(redis).value(), req.token, seed, out_dir));
      cluster->out_rel_ = *out_rel;
      cluster->incarnation_ = joined.incarnation;
      cluster->owners_.SetWeights(
          DecodeWeights(RedisReply::StrOf(Element(r->raw(), 3)), c.shards));
      return cluster;
    }
    if (verdict != "duplicate") return JoinRefusal(c, verdict, detail, req.config_json);
    if (SteadyClock::now() > deadline)
      return Refused(c.job, "a live node named '" + c.node +
                                "' is already in the job (cluster.node must be unique)");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

Status Cluster::Retry(const std::atomic<bool>& stop, const char* what,
                      const std::function<bool()>& step) {
  auto backoff = std::chrono::milliseconds(100);
  for (;;) {
    if (redis_ && step()) return Status::Ok();
    if (stop.load())
      return Status::Error(Status::Code::kIoError,
                           std::string("cluster: stopped while ") + what);
    if (redis_) {
      spdlog::warn("redis: {} failed; reconnecting", what);
      redis_.reset();
      down_since_ = SteadyClock::now();
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
    Status st = Reconnect();
    if (!st.ok())
      spdlog::warn(
          "redis: down {:.0f} s ({}); retrying",
          std::chrono::duration<double>(SteadyClock::now() - down_since_).count(),
          st.message());
  }
}

// Waits until the job has started (cluster.min_nodes have joined), with a
// heartbeat each try, and fills nodes_.
Status Cluster::WaitForStart(const std::atomic<bool>& stop) {
  auto last_log = SteadyClock::now() - std::chrono::seconds(10);
  for (;;) {
    Result<RedisReply> r = RedisReply();
    Status st = Retry(stop, "waiting for the job to start", [&] {
      r = redis_->Command({"EVAL", kStartScript, "2", Key("nodes"), Key("started"),
                           std::to_string(min_nodes_)});
      return r.ok() && !r->IsError() && Heartbeat();
    });
    if (!st.ok()) return st;
    if (r->raw() != nullptr && r->raw()->type == REDIS_REPLY_ARRAY) {
      for (size_t i = 0; i < r->raw()->elements; ++i)
        nodes_.push_back(RedisReply::StrOf(r->raw()->element[i]));
      return Status::Ok();
    }
    if (stop.load())
      return Status::Error(Status::Code::kInvalidArgument,
                           "cluster: stopped while waiting for the job to start");
    if (SteadyClock::now() - last_log > std::chrono::seconds(5)) {
      last_log = SteadyClock::now();
      spdlog::info("cluster: waiting for {} nodes to join job {}", min_nodes_, cfg_.job);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Status Cluster::Start(const std::atomic<bool>& stop, std::function<bool()> local_idle) {
  local_idle_ = std::move(local_idle);
  Status started = WaitForStart(stop);
  if (!started.ok()) return started;
  std::sort(nodes_.begin(), nodes_.end());
  // The placement over every node of the job (no assign read yet).
  std::set<uint32_t> want(resumed_shards_.begin(), resumed_shards_.end());
  for (uint32_t s = 0; s < cfg_.shards; ++s)
    if (owners_.OwnerOf(nodes_, s) == cfg_.node) want.insert(s);
  my_shards_.assign(want.begin(), want.end());
  {
    MutexLock lock(mu_);
    figures_.nodes = nodes_.size();
  }
  // Every stream's group (a shard may come to this node later); where it
  // exists, Redis answers BUSYGROUP, which is fine.
  std::vector<std::vector<std::string>> create;
  for (uint32_t s = 0; s < cfg_.shards; ++s)
    create.push_back({"XGROUP", "CREATE", StreamKey(s), "owners", "0", "MKSTREAM"});
  if (takeover_) create.push_back({"HSET", Key("outdirs"), cfg_.node, out_rel_});
  Status st = Retry(stop, "creating the consumer groups",
                    [&] { return redis_->Pipeline(create).ok(); });
  if (!st.ok()) return st;
  if (takeover_ && own_) {
    // The checkpoint resumed from is the source of every shard it held. The
    // shards this process does not take at once (a node that joined
    // meanwhile has them now, or the lease of one with no hosts left, which
    // is not asked for, is taken later by whoever rendezvous hashing gives
    // it) are loaded from it after this node's next cuts have rotated
    // checkpoint/ away: it is kept in handoff/SEQ/ until no shard's source
    // names it. (A chaos run hung on that: shard 6, with no hosts, held in
    // checkpoint 9, was taken 3 s after the resume, and every try to load it
    // failed with "no checkpoint 9".)
    Status kept = KeepHandoffCheckpoint(own_->sequence);
    if (!kept.ok()) return kept;
  }
  st = Retry(stop, "taking the shards' leases", [&] { return Heartbeat(); });
  if (!st.ok()) return st;
  RestoreOwn();
  std::string names;
  for (const std::string& n : nodes_) names += (names.empty() ? "" : ",") + n;
  uint64_t held = 0, max_epoch = 0;
  for (uint32_t s : my_shards_) {
    held += leases_.state(s) == Leases::State::kHeld;
    max_epoch = std::max(max_epoch, leases_.epoch(s));
  }
  spdlog::info(
      "cluster: job {} started with nodes {}; {} owns {} of {} shards, holds {} leases "
      "(epochs up to {})",
      cfg_.job, names, cfg_.node, my_shards_.size(), cfg_.shards, held, max_epoch);
  // A resumed node first re-reads what it was given and has not acknowledged.
  bool ignored = false;
  st = Retry(stop, "reading pending entries",
             [&] { return Receive(/*pending=*/true, &ignored); });
  if (!st.ok()) return st;
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void Cluster::StashOwn(ShardState own) {
  for (const frontier::HostImage& h : own.frontier.hosts)
    resumed_shards_.push_back(ShardOf(h.key));
  std::sort(resumed_shards_.begin(), resumed_shards_.end());
  resumed_shards_.erase(std::unique(resumed_shards_.begin(), resumed_shards_.end()),
                        resumed_shards_.end());
  resumed_source_ = cfg_.node + " " + std::to_string(own.sequence);
  own_ = std::move(own);
}

void Cluster::RestoreOwn() {
  if (!own_) return;
  std::set<uint32_t> keep(restore_own_.begin(), restore_own_.end());
  ShardState st;
  st.own = true;
  st.from = own_->from;
  st.shards = restore_own_;
  auto mine = [&](std::string_view host) { return keep.count(ShardOf(host)) > 0; };
  for (frontier::HostImage& h : own_->frontier.hosts)
    if (mine(h.key)) st.frontier.hosts.push_back(std::move(h));
  size_t dropped = 0;
  for (auto& u : own_->frontier.urls) {
    if (mine(frontier::HostKey(u.first.url))) {
      st.frontier.urls.push_back(std::move(u));
    } else {
      ++dropped;
    }
  }
  for (HostSnapshot& h : own_->hosts)
    if (mine(h.key)) st.hosts.push_back(std::move(h));
  own_.reset();
  restore_own_.clear();
  if (dropped > 0)
    spdlog::warn(
        "cluster: {} queued URLs of this node's checkpoint belong to shards other nodes "
        "took over while it was away: left to them",
        dropped);
  MutexLock lock(mu_);
  loaded_ = std::move(st);
  has_loaded_ = true;
}

uint32_t Cluster::ShardOf(std::string_view host_key) const {
  return ShardOfHost(host_key, seed_, cfg_.shards);
}

bool Cluster::Owns(std::string_view url) const {
  uint32_t shard = ShardOf(frontier::HostKey(url));
  return ready_[shard].load() && LeaseValid(shard);
}

bool Cluster::LeaseValid(uint32_t shard) const {
  return leases_.Valid(shard, SteadyClock::now().time_since_epoch().count());
}

bool Cluster::Lapsed(std::string_view host_key) const {
  return leases_.Lapsed(ShardOf(host_key), SteadyClock::now().time_since_epoch().count());
}

bool Cluster::Fetchable(std::string_view host_key) const {
  uint32_t shard = ShardOf(host_key);
  if (ready_[shard].load() && LeaseValid(shard)) return true;
  deferred_.fetch_add(1);
  return false;
}

void Cluster::Ship(const std::vector<frontier::UrlEntry>& entries) {
  const auto now = SteadyClock::now();
  MutexLock lock(mu_);
  for (const frontier::UrlEntry& e : entries)
    outbox_.Add(ShardOf(frontier::HostKey(e.url)), e, now);
}

std::vector<frontier::UrlEntry> Cluster::TakeInbox() {
  MutexLock lock(mu_);
  std::vector<frontier::UrlEntry> out = inbox_.Take();
  figures_.urls_received += out.size();
  return out;
}

void Cluster::Admitted() {
  MutexLock lock(mu_);
  inbox_.Admitted();
}

bool Cluster::InboxEmpty() const {
  MutexLock lock(mu_);
  return inbox_.Empty();
}

bool Cluster::Quiet() const {
  // Shards taken and not loaded yet, loaded and not restored by a worker,
  // with entries to claim again, being handed over, or given up and not yet
  // taken by their new owner (Transfers::Quiet) are work: a taker
  // that published "idle" while it loaded could let the job end without
  // them (issue 31, finding 1). (The exchange thread's own to_load_: Quiet
  // is called from Publish.)
  if (!to_load_.empty() || has_loaded_.load()) return false;
  MutexLock lock(mu_);
  return inbox_.Quiet() && outbox_.queued_urls() == 0 && !loaded_ && to_claim_.empty() &&
         pending_from_.empty() && transfers_.Quiet();
}

OutboxCut Cluster::OnCut(uint64_t sequence) {
  MutexLock spill(spill_mu_);  // no batch is between RAM and a spill file now
  MutexLock lock(mu_);
  // The shards this checkpoint holds (their state is restored here), and
  // the epochs the commit must still find.
  std::vector<std::pair<uint32_t, uint64_t>>& shards = cut_shards_[sequence];
  for (const auto& [shard, epoch] : holding_)
    if (ready_[shard].load() || transfers_.Handing(shard))
      shards.emplace_back(shard, epoch);
  // Handoffs drained before this cut: this checkpoint is their source.
  transfers_.Cut(sequence);
  inbox_.Cut(sequence);
  OutboxCut out;
  out.text = kOutboxHeader;
  outbox_.AppendCut(&out.text);
  for (const auto& [shard, files] : spill_)
    for (const SpillFile& f : files) out.spill_files.push_back(f.path);
  if (!out.spill_files.empty()) out.spill_files.push_back(spill_dir_);  // their names
  // Files read back before this cut: their URLs are in RAM above, or in Redis.
  if (!drained_.empty()) drained_cut_[sequence] = std::move(drained_);
  drained_.clear();
  return out;
}

Status Cluster::RestoreOutbox(const std::string& text, const std::string& path) {
  if (text.empty()) return Status::Ok();
  std::vector<frontier::UrlEntry> entries;
  if (text.rfind(kOutboxHeader, 0) != 0 ||
      !ParseLines(std::string_view(text).substr(std::strlen(kOutboxHeader)), &entries)) {
    return Status::Error(Status::Code::kCorruption,
                         path + ": not a cluster outbox (bad header or line)");
  }
  if (!entries.empty())
    spdlog::info("cluster: {} URLs from the checkpoint's outbox queued again",
                 entries.size());
  Ship(entries);
  return Status::Ok();
}

void Cluster::OnPublished(uint64_t sequence) {
  // Acknowledged once committed (Commit, on the exchange thread).
  MutexLock lock(mu_);
  published_ = std::max(published_, sequence);
}

bool Cluster::CommitPending() const {
  MutexLock lock(mu_);
  return takeover_ && published_ > inbox_.committed();
}

void Cluster::AfterCommit(uint64_t sequence) {
  {
    MutexLock spill(spill_mu_);
    for (auto it = drained_cut_.begin();
         it != drained_cut_.end() && it->first <= sequence; it = drained_cut_.erase(it)) {
      for (const std::string& path : it->second) std::remove(path.c_str());
    }
  }
  MutexLock lock(mu_);
  // Acknowledged once checkpoint.prev/ holds them (inbox.h); at the job's
  // end, when nothing will be resumed, once committed.
  inbox_.Committed(sequence, /*last=*/done_.load());
  cut_shards_.erase(cut_shards_.begin(), cut_shards_.upper_bound(sequence));
}

Cluster::Figures Cluster::figures() const {
  uint64_t on_disk = 0;
  {
    MutexLock spill(spill_mu_);
    on_disk = spilled_urls_;
  }
  MutexLock lock(mu_);
  Figures f = figures_;
  f.urls_queued = outbox_.queued_urls();
  f.urls_held = outbox_.held_urls();
  f.urls_on_disk = on_disk;
  f.fetches_deferred = deferred_.load();
  return f;
}

}  // namespace crawler::engine
