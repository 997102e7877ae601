// The cluster chaos run with takeover: nodes killed -9 at random moments
// and resumed, redis-server killed, a join, a leave and a death; the union
// of the fetch logs is the truth set, once. Its seed is printed
// (CRAWLER_TORTURE_SEED replays it).
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/redis/redis.h"
#include "cluster_fixture.h"
#include "crawler/checkpoint.h"
#include "takeover_helpers.h"

namespace crawler::cluster {
namespace {

using namespace engine::cluster_fixture;  // NOLINT: the shared fixture

// Chaos with shared_dir: nodes killed with -9 at random moments and resumed,
// redis-server killed twice, a fourth node joins, then one node leaves
// (SIGTERM) and another is killed for good; the rest finish the crawl,
// taking over both.
TEST_CASE(
    "Cluster chaos with takeover: kill -9 of nodes (resumed), of redis-server, a join, "
    "a leave and a death: the truth set, once",
    "[.][cluster][chaos]") {
  unsigned kills = EnvOr("CRAWLER_CHAOS_KILLS", 10);
  REQUIRE(kills >= 4);  // kills - 2 resumed (two with a Redis kill), a leave, a death
  // CRAWLER_CHAOS_EXTRA: more flags for every node (a run by hand: the
  // turns per address, say, which the fixture switches off).
  const char* more = std::getenv("CRAWLER_CHAOS_EXTRA");
  const std::string extra =
      std::string(kTakeover) +
      " --set cluster.lease_s=10 --set checkpoint.interval_s=0.5"
      " --set frontier.min_delay_s=0.2 --set cluster.max_lag_batches=4"
      " --set cluster.outbox_ram_urls=20 " +
      (more == nullptr ? "" : more);
  ClusterCrawl c("cluster_chaos_takeover", "chaos2", extra,
                 EnvOr("CRAWLER_CHAOS_PAGES", 4000));
  const std::vector<std::string> names = {"n1", "n2", "n3", "n4"};
  const unsigned seed = testing::TortureSeed("cluster chaos", 20261124);
  INFO("seed " << seed << " (CRAWLER_TORTURE_SEED)");
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pause_ms(600, 1800);
  constexpr int kRunning = -100, kNotStarted = -200;
  std::vector<int> exits = {kRunning, kRunning, kRunning, kNotStarted};
  c.nodes.push_back(0);
  unsigned restarts = 0, redis_kills = 0;
  std::string left, dead;
  bool joined = false;
  auto running = [&] {
    std::vector<size_t> r;
    for (size_t i = 0; i < names.size(); ++i) {
      int status = 0;
      if (exits[i] == kRunning && ::waitpid(c.nodes[i], &status, WNOHANG) != 0)
        exits[i] = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      if (exits[i] == kRunning) r.push_back(i);
    }
    return r;
  };
  WaitForCommit(c, "chaos2", "n1");
  for (unsigned event = 0; event < kills; ++event) {
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(rng)));
    if (event == (kills - 2) / 2 && !joined) {
      // n4 joins (an event of its own, before this one's kill); it is one
      // of the nodes the next events may hit once it has a checkpoint.
      c.nodes[3] = Spawn(NodeCommand(c.dir, c.redis.Url(), "chaos2", "n4",
                                     c.resolve + " " + WithDir(extra, c.dir)),
                         c.dir + "/n4.out");
      exits[3] = kRunning;
      joined = true;
      auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (c.redis.Cli("HGET crawler:{chaos2}:commits n4").size() < 2 &&
             std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::vector<size_t> up = running();
    if (up.size() < 2) break;  // the crawl is (nearly) over
    size_t i = up[std::uniform_int_distribution<size_t>(0, up.size() - 1)(rng)];
    const std::string& name = names[i];
    if (event == kills - 2) {  // a graceful leave
      // Of a node that runs: one restarted by the event before may still be
      // resuming (its join waits for the killed process's liveness key to
      // lapse), before crawler sets its signal handlers, and SIGTERM would
      // end it as kill -9 does. Its next commit shows it runs. (The seeded
      // events restart n4 at event 7 and stop it 1.8 s later: this run
      // failed so once, n4 ended by the signal, exit status -1.)
      const std::string commits = "HGET crawler:{chaos2}:commits " + name;
      const std::string before = c.redis.Cli(commits);
      auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (c.redis.Cli(commits) == before && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      ::kill(c.nodes[i], SIGTERM);
      exits[i] = WaitExitFor(c.nodes[i], 300);
      left = name;
      continue;
    }
    ::kill(c.nodes[i], SIGKILL);
    ::waitpid(c.nodes[i], nullptr, 0);
    if (event == kills - 1) {  // dead for good
      exits[i] = 0;
      dead = name;
      continue;
    }
    if (event == (kills - 2) / 3 || event == 2 * (kills - 2) / 3) {
      c.redis.Kill();
      ++redis_kills;
      std::this_thread::sleep_for(std::chrono::milliseconds(800));
      c.redis.Start();
    }
    c.nodes[i] =
        Spawn(std::string(CRAWLER_BINARY) + " crawl --resume " + c.dir + "/" + name,
              c.dir + "/" + name + ".out");
    ++restarts;
  }
  // One deadline for all (a run takes ~60 s after the events in Release, ~45
  // s under ASan): a node that hangs fails the test in 5 minutes, with its
  // log's end, before ctest's TIMEOUT (600 s) would end it without them (a
  // CI run timed out so once, 2026-12-03, and left nothing to read).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  for (size_t i = 0; i < names.size(); ++i) {
    if (exits[i] == kRunning)
      exits[i] = WaitExitFor(
          c.nodes[i],
          std::max(1.0, Seconds(deadline - std::chrono::steady_clock::now()).count()));
    INFO(names[i] << ": " << NodeOutput(c.dir, names[i]));
    std::string log = ReadText(c.dir + "/" + names[i] + "/crawler.log");
    INFO(names[i] << "'s crawler.log, its end:\n"
                  << log.substr(log.size() > 8000 ? log.size() - 8000 : 0));
    CHECK(exits[i] == 0);
  }
  c.site.Stop();
  INFO(restarts << " kills with resume, " << redis_kills << " redis kills, left: " << left
                << ", dead: " << dead);
  CHECK(joined);
  CHECK(restarts == kills - 2);
  CHECK(redis_kills == 2);
  CHECK(!left.empty());
  REQUIRE(!dead.empty());
  CheckUnionWithDead(c, "chaos2", dead, names);
}

}  // namespace
}  // namespace crawler::cluster
