// What politeness per address across nodes costs a request
// (cluster.ip_politeness, crawler/src/cluster/address_tokens.h), through a
// real Redis (scripts/bench-cluster.sh turns starts one). --threads worker
// threads of one node go round --addresses addresses (limits that never
// refuse: the cost of asking, not of waiting) for --seconds, as workers go
// round their hosts: each asks for a turn at the next address, gives it
// back at once if granted, and goes on either way (the node's turn thread
// asks Redis meanwhile); a thread that went round without a turn sleeps
// the wait it was told. Prints turns/s, the time a worker spends in a
// Start (what a request costs its thread), the time from the first ask at
// an address to its turn, at p50 and p99, turns granted and not taken,
// and Redis's CPU per turn. Asserts nothing.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cluster/address_tokens.h"
#include "cluster/redis/redis.h"

using crawler::cluster::AddressTokens;
using crawler::cluster::Redis;
using crawler::engine::AddressTurn;
using Clock = std::chrono::steady_clock;

namespace {

double RedisCpuS(Redis& r) {
  auto info = r.Command({"INFO", "cpu"});
  const std::string s = info.ok() ? info->Str() : "";
  double cpu = 0;
  for (const char* f : {"used_cpu_sys:", "used_cpu_user:"}) {
    const size_t at = s.find(f);
    if (at != std::string::npos) cpu += std::strtod(s.c_str() + at + strlen(f), nullptr);
  }
  return cpu;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"address_turns_bench: the cost of a turn at an address, through Redis"};
  std::string url = "redis://127.0.0.1:6379";
  unsigned threads = 4, addresses = 100;
  double seconds = 5;
  app.add_option("--redis", url, "redis://HOST:PORT");
  app.add_option("--threads", threads, "threads sharing the node's connection");
  app.add_option("--addresses", addresses, "addresses the turns are at");
  app.add_option("--seconds", seconds, "how long");
  CLI11_PARSE(app, argc, argv);
  auto address = crawler::cluster::ParseRedisUrl(url, "--redis");
  if (!address.ok()) {
    std::fprintf(stderr, "%s\n", address.status().message().c_str());
    return 2;
  }
  auto probe = Redis::Connect(*address, 2);
  if (!probe.ok()) {
    std::fprintf(stderr, "%s\n", probe.status().message().c_str());
    return 1;
  }
  (void)(*probe)->Command({"FLUSHALL"});
  // The node's liveness key, as a joined node has it: each start checks the
  // turns in progress at its address against it.
  (void)(*probe)->Command({"SET", "crawler:{bench}:alive:n1", "p1"});
  AddressTokens turns(*address, "crawler:{bench}:", "n1", "p1",
                      AddressTokens::Limits{0, 1'000'000, 60'000});
  const double cpu_before = RedisCpuS(**probe);
  std::atomic<bool> stop{false};
  std::vector<std::vector<double>> latencies(threads);
  std::vector<std::thread> pool;
  const Clock::time_point start = Clock::now();
  std::vector<std::vector<double>> calls(threads);
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      // This thread's addresses, each with when it was first asked (zero:
      // not waiting).
      std::vector<std::string> mine;
      for (unsigned i = t; i < addresses; i += threads)
        mine.push_back("10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256));
      std::vector<Clock::time_point> asked(mine.size());
      while (!stop.load()) {
        bool any = false;
        auto wait = std::chrono::milliseconds(100);
        for (size_t i = 0; i < mine.size() && !stop.load(); ++i) {
          const Clock::time_point t0 = Clock::now();
          if (asked[i] == Clock::time_point{}) asked[i] = t0;
          AddressTurn turn = turns.Start(mine[i]);
          const Clock::time_point t1 = Clock::now();
          calls[t].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
          if (!turn.granted) {
            wait = std::min(wait, turn.wait);
            continue;
          }
          turns.End(mine[i], turn.token);
          latencies[t].push_back(
              std::chrono::duration<double, std::micro>(t1 - asked[i]).count());
          asked[i] = {};
          any = true;
        }
        if (!any) std::this_thread::sleep_for(wait);
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (std::thread& th : pool) th.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  const double cpu = RedisCpuS(**probe) - cpu_before;
  std::vector<double> all, in_start;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  for (const auto& l : calls) in_start.insert(in_start.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  std::sort(in_start.begin(), in_start.end());
  const AddressTokens::Figures f = turns.figures();
  if (all.empty() || f.local > 0) {
    std::fprintf(stderr, "turns not granted by Redis (%llu local)\n",
                 static_cast<unsigned long long>(f.local));
    return 1;
  }
  const auto pct = [](const std::vector<double>& v, size_t p) {
    return v[v.size() * p / 100];
  };
  std::printf(
      "address turns: %u threads, %u addresses, %.1f s: %.0f turns/s; in Start p50 %.1f "
      "us, "
      "p99 %.1f us; ask to turn p50 %.0f us, p99 %.0f us; %llu granted, %llu not taken; "
      "Redis CPU %.1f us a turn\n",
      threads, addresses, elapsed, static_cast<double>(all.size()) / elapsed,
      pct(in_start, 50), pct(in_start, 99), pct(all, 50), pct(all, 99),
      static_cast<unsigned long long>(f.granted),
      static_cast<unsigned long long>(f.unused),
      1e6 * cpu / static_cast<double>(all.size()));
  return 0;
}
