// See cluster_job.h.
#include "cluster/membership/cluster_job.h"

#include <spdlog/spdlog.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "base/file_util.h"
#include "cluster/redis/cluster_wire.h"

namespace crawler::cluster {

namespace json = boost::json;

Result<JobIdentity> ReadJobIdentity(const std::string& out_dir) {
  const std::string path = out_dir + "/" + kClusterJobFile;
  std::ifstream in(path, std::ios::binary);
  if (!in) return JobIdentity{};
  std::stringstream text;
  text << in.rdbuf();
  boost::system::error_code ec;
  json::value v = json::parse(text.str(), ec);
  const json::object* o = ec ? nullptr : v.if_object();
  const json::value* job = o != nullptr ? o->if_contains("job") : nullptr;
  const json::value* inc = o != nullptr ? o->if_contains("incarnation") : nullptr;
  const json::value* seed = o != nullptr ? o->if_contains("seed") : nullptr;
  if (job == nullptr || !job->is_string() || inc == nullptr || !inc->is_string() ||
      inc->as_string().empty() || seed == nullptr || !seed->is_string())
    return Status::Error(Status::Code::kCorruption,
                         path + ": not a cluster job record (job, incarnation, seed)");
  JobIdentity id;
  id.job = std::string(job->as_string());
  id.incarnation = std::string(inc->as_string());
  id.seed = std::strtoull(std::string(seed->as_string()).c_str(), nullptr, 10);
  return id;
}

Status WriteJobIdentity(const std::string& out_dir, const JobIdentity& id) {
  json::object o{{"job", id.job},
                 {"incarnation", id.incarnation},
                 {"seed", std::to_string(id.seed)}};
  return WriteFileAtomic(out_dir + "/" + kClusterJobFile, json::serialize(o) + "\n",
                         /*durable=*/true, 0600);
}

Status JobLost(const std::string& verdict, const std::string& found,
               const JobIdentity& mine, const RedisAddress& address) {
  std::string what = verdict == "missing"
                         ? "is not in Redis at " + address.Text()
                         : "in Redis at " + address.Text() + " is another incarnation (" +
                               (found.empty() ? std::string("none recorded") : found) +
                               ")";
  return Status::Error(
      Status::Code::kInvalidArgument,
      "cluster job '" + mine.job + "' " + what + ", but this node was part of it (" +
          kClusterJobFile + ": incarnation " + mine.incarnation + ", seed " +
          std::to_string(mine.seed) +
          "): Redis lost its data (restarted without its append-only file?) or "
          "cluster.redis names another server. No new job is created: a new seed "
          "would give hosts new owners and lose the URLs in flight. Restore Redis's "
          "data, or crawl anew under a new cluster.job with new --out directories");
}

Status CheckRedisSettings(Redis& redis, const RedisAddress& address) {
  auto get = [&](const char* name) -> std::string {
    auto r = redis.Command({"CONFIG", "GET", name});
    if (!r.ok() || r->view().size() != 2) return "?";
    return (*r)[1].str();
  };
  // A replica refuses every write (READONLY): the job could not even be
  // joined. Said at once, naming its primary.
  auto role = redis.Command({"ROLE"});
  if (role.ok() && (*role)[0].str() == "slave") {
    return Status::Error(Status::Code::kInvalidArgument,
                         "redis " + address.Text() + " is a read-only replica of " +
                             (*role)[1].str() + ":" + (*role)[2].str() +
                             ": cluster.redis must name the primary");
  }
  const std::string policy = get("maxmemory-policy");
  if (policy == "?") {
    spdlog::warn(
        "redis {}: CONFIG GET refused: maxmemory-policy (must be noeviction) and "
        "appendfsync (always loses nothing) not checked",
        address.Text());
    return Status::Ok();
  }
  if (policy != "noeviction")
    return Status::Error(
        Status::Code::kInvalidArgument,
        "redis " + address.Text() + ": maxmemory-policy is " + policy +
            ": Redis would evict the job's streams and leases when full (URLs lost, "
            "hosts with two owners); set maxmemory-policy noeviction (a full Redis then "
            "refuses sends, which wait on the nodes' disks)");
  const std::string aof = get("appendonly"), fsync = get("appendfsync");
  if (aof == "no")
    spdlog::warn(
        "redis {}: appendonly is no: if redis-server restarts, it comes back empty and "
        "the job is lost (every node stops with exit 2); set appendonly yes and "
        "appendfsync always",
        address.Text());
  else if (fsync != "always")
    spdlog::warn(
        "redis {}: appendfsync is {}: a crash of Redis's machine can lose the last "
        "{} of writes: sends the nodes saw confirmed (their URLs) and lease changes; "
        "appendfsync always loses none",
        address.Text(), fsync,
        fsync == "everysec" ? "second" : "seconds (the OS decides)");
  return Status::Ok();
}

Result<std::optional<uint64_t>> ReadLastCommit(const RedisAddress& address,
                                               const std::string& job,
                                               const std::string& node,
                                               const std::atomic<bool>* stop) {
  auto bad = [](const std::string& m) {
    return Status::Error(Status::Code::kInvalidArgument, "cluster.redis: " + m);
  };
  auto redis = Redis::ConnectWaiting(address, 5, 60, stop);  // it may be restarting too
  if (!redis.ok() && StopSet(stop)) return redis.status();
  if (!redis.ok()) return bad(redis.status().message());
  // A Redis just restarted answers LOADING while it reads its AOF; one
  // killed or restarted mid-question resets the connection (a node that
  // starts while Redis restarts: the chaos test's kills). Both are asked
  // again, over a new connection for the latter, for up to 60 s.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  const std::vector<std::string> get = {"HGET", "crawler:{" + job + "}:commits", node};
  auto r = (*redis)->Command(get);
  auto again = [&r] {
    return !r.ok() || (r->IsError() && r->Str().rfind("LOADING", 0) == 0);
  };
  while (again() && std::chrono::steady_clock::now() < until) {
    if (StopSet(stop)) return StoppedWhile("reading this node's last commit");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (!r.ok()) {
      auto fresh = Redis::ConnectWaiting(address, 5, 60, stop);
      if (!fresh.ok() && StopSet(stop)) return fresh.status();
      if (!fresh.ok()) return bad(fresh.status().message());
      redis = std::move(fresh);
    }
    r = (*redis)->Command(get);
  }
  if (!r.ok() || r->IsError())
    return bad("cannot read this node's last commit: " +
               (r.ok() ? r->Str() : r.status().message()));
  if (r->IsNil()) return std::optional<uint64_t>();
  return std::optional<uint64_t>(std::strtoull(r->Str().c_str(), nullptr, 10));
}

}  // namespace crawler::cluster
