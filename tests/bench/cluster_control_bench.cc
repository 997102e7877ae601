// The control plane of a cluster crawl at scale, measured through a real
// Redis (scripts/bench-cluster.sh control starts one): N exchange-only nodes
// (real Clusters, crawler/src/cluster/cluster.h, in this one process; no
// workers, no URL traffic) on S shards. Prints numbers; asserts nothing.
//
//   1. busy: every node busy (crawling, as far as the exchange knows) for
//      --seconds: Redis CPU (share of one core), commands/s, bytes/s in.
//   2. one busy: every node idle but one, the last in the end test's order
//      (the end of a crawl, when the idle ones test for the end every
//      round): the same figures.
//   3. done: the last node goes idle; the time until every node sees the
//      job done, in ms and in heartbeats.
// Lease renewal latency: each heartbeat's round trip (it carries the lease
// renewals) in phases 1-3, from the nodes' histograms (ClusterHealth): the
// bucket that holds p50 and p99. All N nodes' exchange threads share this machine's
// cores with Redis, so the round trips include their scheduling delays.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/redis/redis.h"

using crawler::cluster::Cluster;
using crawler::cluster::Redis;
using crawler::engine::Config;
using crawler::report::ClusterHealth;
using Clock = std::chrono::steady_clock;

namespace {

double InfoField(Redis& r, const char* section, const std::string& field) {
  auto info = r.Command({"INFO", section});
  std::string s = info.ok() ? info->Str() : "";
  size_t at = s.find("\n" + field + ":");
  return at == std::string::npos
             ? 0
             : std::strtod(s.c_str() + at + field.size() + 2, nullptr);
}

struct RedisLoad {
  double cpu_s, commands, bytes_in;
};

RedisLoad Sample(Redis& r) {
  return {InfoField(r, "cpu", "used_cpu_user") + InfoField(r, "cpu", "used_cpu_sys"),
          InfoField(r, "stats", "total_commands_processed"),
          InfoField(r, "stats", "total_net_input_bytes")};
}

// Redis's load over `seconds`, printed under `what`.
void Measure(Redis& r, const char* what, double seconds) {
  RedisLoad a = Sample(r);
  auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  RedisLoad b = Sample(r);
  double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf(
      "  %-9s Redis CPU %.1f%% of one core, %.0f commands/s, %.0f KB/s in (over %.1f "
      "s)\n",
      what, 100 * (b.cpu_s - a.cpu_s) / wall, (b.commands - a.commands) / wall,
      (b.bytes_in - a.bytes_in) / wall / 1e3, wall);
}

using Buckets = std::array<uint64_t, ClusterHealth::kRttBounds.size()>;

// Every node's heartbeat round trips so far, by bucket.
Buckets RoundTrips(const std::vector<std::unique_ptr<Cluster>>& nodes) {
  Buckets sum{};
  for (const auto& n : nodes) {
    ClusterHealth h = n->health();
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += h.rtt_buckets[i];
  }
  return sum;
}

// The bucket bound (ms) under which a share `p` of the round trips counted
// since `since` fell.
double Quantile(const std::vector<std::unique_ptr<Cluster>>& nodes, const Buckets& since,
                double p, uint64_t* count) {
  Buckets sum = RoundTrips(nodes);
  uint64_t total = 0;
  for (size_t i = 0; i < sum.size(); ++i) total += sum[i] -= since[i];
  *count = total;
  uint64_t seen = 0;
  for (size_t i = 0; i < sum.size(); ++i) {
    seen += sum[i];
    if (static_cast<double>(seen) >= p * static_cast<double>(total))
      return ClusterHealth::kRttBounds[i] * 1000;
  }
  return 1e9;  // over the last bound
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cluster control-plane benchmark (see scripts/bench-cluster.sh control)"};
  std::string redis = "redis://127.0.0.1:6390";
  uint32_t nodes = 64, shards = 4096, batch_ms = 20;
  double seconds = 10, heartbeat_s = 2;
  app.add_option("--redis", redis, "redis://HOST:PORT");
  app.add_option("--nodes", nodes, "exchange-only nodes");
  app.add_option("--shards", shards, "cluster.shards");
  app.add_option("--batch-ms", batch_ms, "cluster.batch_ms");
  app.add_option("--heartbeat-s", heartbeat_s, "cluster.heartbeat_s");
  app.add_option("--seconds", seconds, "length of each measured phase");
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);  // not 64 nodes' join and start lines

  const std::string job = "control-" + std::to_string(::getpid());
  const std::string dir = "/tmp/cluster-control-bench-" + std::to_string(::getpid());
  std::vector<std::unique_ptr<Cluster>> cluster;
  for (uint32_t i = 0; i < nodes; ++i) {
    Config c;
    c.cluster.redis = redis;
    c.cluster.job = job;
    char name[16];
    std::snprintf(name, sizeof(name), "n%03u", i);  // sorted as numbered
    c.cluster.node = name;
    c.cluster.min_nodes = nodes;
    c.cluster.shards = shards;
    c.cluster.batch_ms = batch_ms;
    c.cluster.heartbeat_s = heartbeat_s;
    std::filesystem::create_directories(dir + "/" + c.cluster.node);
    auto n = Cluster::Join(c, dir + "/" + c.cluster.node, false);
    if (!n.ok()) {
      std::fprintf(stderr, "join: %s\n", n.status().message().c_str());
      return 2;
    }
    cluster.push_back(std::move(n).value());
  }
  auto address = crawler::cluster::ParseRedisUrl(redis);
  if (!address.ok()) return 2;
  auto probe = Redis::Connect(*address, 5);
  if (!probe.ok()) return 2;
  std::atomic<bool> stop{false};
  std::unique_ptr<std::atomic<bool>[]> idle(new std::atomic<bool>[nodes]);
  for (uint32_t i = 0; i < nodes; ++i) idle[i] = false;
  auto t0 = Clock::now();
  {
    std::vector<std::thread> starting;
    for (uint32_t i = 0; i < nodes; ++i)
      starting.emplace_back([&, i] {
        if (!cluster[i]->Start(stop, [&, i] { return idle[i].load(); }).ok())
          std::fprintf(stderr, "node %u did not start\n", i);
      });
    for (auto& t : starting) t.join();
  }
  std::printf(
      "cluster control bench: %u exchange-only nodes, %u shards, heartbeat %.1f s, "
      "batch_ms %u; started in %.1f s\n",
      nodes, shards, heartbeat_s, batch_ms,
      std::chrono::duration<double>(Clock::now() - t0).count());
  std::this_thread::sleep_for(std::chrono::duration<double>(2 * heartbeat_s));
  // The round trips of the phases below (not the start's: every node takes
  // its leases and makes every stream's group then).
  const Buckets start = RoundTrips(cluster);

  Measure(**probe, "all busy:", seconds);
  // The busy one is the last the end test reads (the nodes sorted).
  for (uint32_t i = 0; i + 1 < nodes; ++i) idle[i] = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(heartbeat_s));
  Measure(**probe, "one busy:", seconds);

  auto idle_at = Clock::now();
  idle[nodes - 1] = true;
  auto until = idle_at + std::chrono::seconds(120);
  size_t done = 0;
  while (Clock::now() < until) {
    done = static_cast<size_t>(std::count_if(cluster.begin(), cluster.end(),
                                             [](const auto& n) { return n->Done(); }));
    if (done == cluster.size()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  double done_s = std::chrono::duration<double>(Clock::now() - idle_at).count();
  if (done == cluster.size())
    std::printf(
        "  done: every node saw it %.0f ms after the last went idle (%.2f heartbeats)\n",
        done_s * 1000, done_s / heartbeat_s);
  else
    std::printf("  done: NOT seen by %zu of %u nodes within 120 s\n",
                cluster.size() - done, nodes);
  uint64_t beats = 0;
  double p50 = Quantile(cluster, start, 0.5, &beats);
  double p99 = Quantile(cluster, start, 0.99, &beats);
  std::printf(
      "  lease renewal (heartbeat round trip): p50 <= %.1f ms, p99 <= %.1f ms (%llu)\n",
      p50, p99, static_cast<unsigned long long>(beats));

  stop = true;
  cluster.clear();  // their last rounds before the keys go
  (void)(*probe)->Command({"EVAL",
                           "for _, k in ipairs(redis.call('keys', ARGV[1])) do "
                           "redis.call('del', k) end return 1",
                           "0", "crawler:{" + job + "}:*"});
  std::filesystem::remove_all(dir);
  return 0;
}
