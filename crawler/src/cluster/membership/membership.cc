// See membership.h.
#include "cluster/membership/membership.h"

#include <spdlog/spdlog.h>
#include <xxhash.h>

#include <algorithm>
#include <boost/uuid/random_generator.hpp>
#include <boost/uuid/uuid_io.hpp>
#include <charconv>
#include <filesystem>
#include <random>
#include <set>
#include <string_view>
#include <thread>

#include "cluster/membership/cluster_job.h"
#include "cluster/membership/shard_owners.h"
#include "cluster/redis/cluster_wire.h"

namespace crawler::cluster {

using namespace cluster_wire;  // NOLINT: the scripts this file speaks

namespace {

// With shared_dir: OUT relative to it, where the others find this node's
// checkpoints. Errors: OUT is not inside shared_dir.
Result<std::string> OutUnderShared(const engine::ClusterConfig& c,
                                   const std::string& out_dir) {
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
Status JoinRefusal(const engine::ClusterConfig& c, const std::string& verdict,
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

JoinRequest MakeJoinRequest(const engine::Config& config,
                            const std::vector<std::string>& seeds) {
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

// The join's connection, its settings checked. A new crawl fails at once on
// a wrong address (a setup error, exit 2, not an output failure); a resumed
// node waits a minute, or until `stop`.
Result<std::unique_ptr<Redis>> ConnectToJoin(const RedisAddress& address, bool resumed,
                                             const std::atomic<bool>* stop) {
  auto redis = Redis::ConnectWaiting(address, 5, resumed ? 60 : 0, stop);
  if (!redis.ok() && StopSet(stop)) return redis.status();
  if (!redis.ok())
    return Status::Error(
        Status::Code::kInvalidArgument,
        (address.master.empty() ? "cluster.redis: " : "cluster.sentinels: ") +
            redis.status().message());
  if (Status st = CheckRedisSettings(**redis, address); !st.ok()) return st;
  return redis;
}

}  // namespace

Result<JoinedJob> JoinJob(const engine::Config& config, const std::string& out_dir,
                          bool resumed, const std::vector<std::string>& seeds,
                          const std::atomic<bool>* stop) {
  const engine::ClusterConfig& c = config.cluster;
  auto address = ClusterRedisAddress(c);
  if (!address.ok()) return address.status();
  auto out_rel = OutUnderShared(c, out_dir);
  if (!out_rel.ok()) return out_rel.status();
  auto redis = ConnectToJoin(*address, resumed, stop);
  if (!redis.ok()) return redis.status();
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
  const std::string waiting = "waiting to join job " + c.job;
  bool said_waiting = false;
  for (;;) {
    if (StopSet(stop)) return StoppedWhile(waiting);
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
    const std::string verdict = (*r)[0].str(), detail = (*r)[1].str();
    if (verdict == "missing" || verdict == "incarnation")
      return JobLost(verdict, detail, *mine, *address);
    if (verdict == "ok") {
      uint64_t seed = 0;
      std::from_chars(detail.data(), detail.data() + detail.size(), seed);
      JobIdentity joined{c.job, (*r)[2].str(), seed};
      if (mine->incarnation.empty() && !joined.incarnation.empty())
        if (Status st = WriteJobIdentity(out_dir, joined); !st.ok()) return st;
      spdlog::info("cluster: node {} joined job {} at {}", c.node, c.job,
                   address->Text());
      return JoinedJob{*address,
                       std::move(redis).value(),
                       req.token,
                       seed,
                       joined.incarnation,
                       *out_rel,
                       DecodeWeights((*r)[3].str(), c.shards)};
    }
    if (verdict != "duplicate") return JoinRefusal(c, verdict, detail, req.config_json);
    if (SteadyClock::now() > deadline)
      return Refused(c.job, "a live node named '" + c.node +
                                "' is already in the job (cluster.node must be unique)");
    if (!said_waiting)
      spdlog::info(
          "cluster: node {}'s liveness key is held (by its previous process?): "
          "waiting up to {:.0f} s for it to lapse",
          c.node, c.heartbeat_s * 4);
    said_waiting = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

Membership::Membership(std::string job, std::string node, uint32_t min_nodes,
                       bool takeover)
    : job_(std::move(job)),
      node_(std::move(node)),
      min_nodes_(min_nodes),
      takeover_(takeover) {}

std::string Membership::Key(const std::string& suffix) const {
  return "crawler:{" + job_ + "}:" + suffix;
}

std::vector<std::string> Membership::StartCommand() const {
  return {"EVAL",       kStartScript,   "2",
          Key("nodes"), Key("started"), std::to_string(min_nodes_)};
}

bool Membership::Started(ReplyView reply) {
  if (!reply.array()) return false;
  SetNodes(reply.strings());
  return true;
}

void Membership::SetNodes(std::vector<std::string> nodes) {
  if (nodes.empty()) return;
  std::sort(nodes.begin(), nodes.end());
  nodes_ = std::move(nodes);
}

std::optional<std::vector<std::string>> Membership::StateCommand(bool idle) {
  busy_ = !idle;
  asked_ = idle ? State::kIdle : State::kBusy;
  if (asked_ == sent_) return std::nullopt;
  return std::vector<std::string>{
      "EVAL", kStateScript,          "2", Key("state"), Key("busy"),
      node_,  idle ? "idle" : "busy"};
}

void Membership::StateWritten(bool ok) { sent_ = ok ? asked_ : State::kUnknown; }

std::vector<std::string> Membership::DoneHintCommand() const {
  return {"EVAL",      kDoneHintScript,  "4",         Key("done"),
          Key("sent"), Key("delivered"), Key("busy"), Key("alive:")};
}

std::vector<std::string> Membership::DoneCommand() const {
  std::vector<std::string> cmd = {
      "EVAL",       kDoneScript,   std::to_string(6 + nodes_.size()),
      Key("state"), Key("sent"),   Key("delivered"),
      Key("done"),  Key("holder"), Key("holds")};
  for (const std::string& n : nodes_) cmd.push_back(Key("alive:" + n));
  cmd.push_back(takeover_ ? "1" : "0");
  cmd.insert(cmd.end(), nodes_.begin(), nodes_.end());
  return cmd;
}

std::vector<std::string> Membership::ReleaseCommand(
    const std::vector<std::pair<uint32_t, std::string>>& leases) const {
  std::vector<std::string> release = {"EVAL", kReleaseScript,
                                      std::to_string(leases.size())};
  for (const auto& [shard, token] : leases)
    release.push_back(Key("lease:" + std::to_string(shard)));
  for (const auto& [shard, token] : leases) release.push_back(token);
  return release;
}

std::vector<std::vector<std::string>> Membership::LeaveCommands(
    const std::vector<std::pair<uint32_t, std::string>>& leases) const {
  return {ReleaseCommand(leases), {"DEL", Key("alive:" + node_)}};
}

bool Membership::Publish(RedisLink& redis, bool idle) {
  // Written when it changes (a read or a lease taken also mark this node
  // busy in Redis: unknown then), and at every heartbeat.
  auto cmd = StateCommand(idle);
  if (!cmd) return true;
  auto r = redis->Command(*cmd);
  const bool ok = r.ok() && !redis.Failed(*r, "state");
  StateWritten(ok);
  return ok;
}

bool Membership::TestDone(RedisLink& redis) {
  auto hint = redis->Command(DoneHintCommand());
  if (!hint.ok() || redis.Failed(*hint, "end test")) return false;
  if (hint->Int() == 0) return true;
  auto r = redis->Command(DoneCommand());
  if (!r.ok() || redis.Failed(*r, "end test")) return false;
  if (r->Int() == 1 && !done_.exchange(true))
    spdlog::info("cluster: job {} is done (every node idle, every batch applied)", job_);
  return true;
}

}  // namespace crawler::cluster
