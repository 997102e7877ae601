// Death, leave and zombies with cluster.shared_dir (crawler/src/cluster.h):
// three nodes of the real binary, a real redis-server, crawler-testsite; one
// node is killed with -9 (not restarted), leaves on SIGTERM, or is paused
// past its lease while the others take its shards over. The oracle holds for
// the union of the nodes' fetch logs, a dead node's cut to its last
// committed checkpoint (what the takers started from).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <random>
#include <string>
#include <thread>

#include "cluster_fixture.h"
#include "crawler/checkpoint.h"

namespace crawler::engine {
namespace {

using namespace cluster_fixture;  // NOLINT: the shared fixture
using Seconds = std::chrono::duration<double>;

std::string RedisCli(const RedisServer& redis, const std::string& args) {
  CommandResult r =
      RunCommand("redis-cli -p " + std::to_string(redis.port()) + " " + args);
  return r.exit_code == 0 ? r.output : std::string();
}

// The manifest of NODE's last committed checkpoint (Redis: commits), or an
// empty object while it has none with a fetch in it.
boost::json::object Committed(const ClusterCrawl& c, const std::string& job,
                              const std::string& node) {
  std::string seq = RedisCli(c.redis, "HGET crawler:{" + job + "}:commits " + node);
  if (seq.empty() || seq == "\n") return {};
  uint64_t want = std::stoull(seq);
  for (const char* d : {kCheckpointDir, kCheckpointPrevDir}) {
    auto m = ReadManifest(c.dir + "/" + node + "/" + d);
    if (m.ok() && m->at("sequence").to_number<uint64_t>() == want) return *m;
  }
  return {};
}

uint64_t CommittedLogBytes(const ClusterCrawl& c, const std::string& job,
                           const std::string& node) {
  boost::json::object m = Committed(c, job, node);
  return m.empty() ? 0 : m.at("fetch_log").at("bytes").to_number<uint64_t>();
}

// Waits until NODE has committed a checkpoint with fetches in it.
void WaitForCommit(const ClusterCrawl& c, const std::string& job,
                   const std::string& node) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (CommittedLogBytes(c, job, node) == 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(CommittedLogBytes(c, job, node) > 0);
}

// Shards whose last lease holder is NODE.
size_t ShardsHeldBy(const ClusterCrawl& c, const std::string& job,
                    const std::string& node) {
  std::string all = RedisCli(c.redis, "HVALS crawler:{" + job + "}:holder");
  size_t n = 0;
  for (size_t at = 0; (at = all.find(node + " ", at)) != std::string::npos; ++at)
    n += at == 0 || all[at - 1] == '\n';
  return n;
}

// Seconds until no shard's last holder is NODE (at most `limit`).
double SecondsUntilTaken(const ClusterCrawl& c, const std::string& job,
                         const std::string& node, double limit) {
  auto start = std::chrono::steady_clock::now();
  while (ShardsHeldBy(c, job, node) > 0 &&
         Seconds(std::chrono::steady_clock::now() - start).count() < limit)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return Seconds(std::chrono::steady_clock::now() - start).count();
}

// Waits for n1 and n3 (each must exit 0).
void WaitOthers(ClusterCrawl& c) {
  for (size_t i : {0, 2}) {
    int code = WaitExitFor(c.nodes[i], 600);
    INFO(kNodes[i] << ": "
                   << ReadText(c.dir + "/" + kNodes[i] + ".out").substr(0, 20000));
    CHECK(code == 0);
  }
}

// The oracle with a node that died: its fetch log cut to its last committed
// checkpoint (what the takers started from), then the union of all.
void CheckUnionWithDead(const ClusterCrawl& c, const std::string& job,
                        const std::string& dead) {
  uint64_t keep = CommittedLogBytes(c, job, dead);
  REQUIRE(keep > 0);
  std::filesystem::resize_file(c.dir + "/" + dead + "/fetch-log.jsonl", keep);
  CheckUnionIsTruth(c.dir, c.truth);
}

constexpr const char* kTakeover =
    " --set frontier.min_delay_s=0.05 --set checkpoint.interval_s=1"
    " --set cluster.shared_dir={dir}";

TEST_CASE(
    "Cluster death: kill -9 of one of three, not restarted: the others take its shards "
    "over from its last committed checkpoint; the truth set, once",
    "[cluster][takeover]") {
  const double kLease = 3;
  ClusterCrawl c("cluster_death", "death",
                 std::string(kTakeover) + " --set cluster.lease_s=3");
  WaitForCommit(c, "death", "n2");
  size_t had = ShardsHeldBy(c, "death", "n2");
  CHECK(had > 0);
  ::kill(c.nodes[1], SIGKILL);
  ::waitpid(c.nodes[1], nullptr, 0);
  double took = SecondsUntilTaken(c, "death", "n2", 120);
  // The figure for the target (printed: Catch2's WARN).
  WARN("n2's " << had << " shards taken over " << took << " s after its kill -9");
  CHECK(took <= kLease + 15);  // the target: TTL + 15 s
  WaitOthers(c);
  c.site.Stop();
  CheckUnionWithDead(c, "death", "n2");
  std::string logs =
      ReadText(c.dir + "/n1/crawler.log") + ReadText(c.dir + "/n3/crawler.log");
  CHECK_THAT(logs, Catch::Contains("took over"));
  CHECK_THAT(logs, Catch::Contains("from node n2 checkpoint"));
}

TEST_CASE(
    "Cluster leave: SIGTERM to one of three: it commits its last checkpoint, gives its "
    "leases up and exits 0; the others take over at once; the truth set, once",
    "[cluster][takeover]") {
  // A long lease: a takeover faster than it shows the leases were given up.
  const double kLease = 30;
  ClusterCrawl c("cluster_leave", "leave",
                 std::string(kTakeover) + " --set cluster.lease_s=30");
  WaitForCommit(c, "leave", "n2");
  ::kill(c.nodes[1], SIGTERM);
  int code = WaitExitFor(c.nodes[1], 120);
  INFO(ReadText(c.dir + "/n2.out").substr(0, 20000));
  CHECK(code == 0);
  double took = SecondsUntilTaken(c, "leave", "n2", 120);
  WARN("n2's shards taken over " << took << " s after it exited");
  CHECK(took < kLease);
  WaitOthers(c);
  c.site.Stop();
  CheckUnionIsTruth(c.dir, c.truth);  // n2's whole output: all of it committed
  CHECK_THAT(ReadText(c.dir + "/n2/crawler.log"), Catch::Contains("leases given up"));
}

TEST_CASE(
    "Cluster zombie: a node paused past its lease while the others take its shards "
    "over is refused and stops when it wakes; resumed, it leaves them to their new "
    "owners; the truth set, once",
    "[cluster][takeover]") {
  ClusterCrawl c("cluster_zombie_taken", "ztaken",
                 std::string(kTakeover) + " --set cluster.lease_s=3" + kLongTimeouts);
  WaitForCommit(c, "ztaken", "n2");
  ::kill(c.nodes[1], SIGSTOP);
  double took = SecondsUntilTaken(c, "ztaken", "n2", 120);
  INFO("n2's shards taken over " << took << " s after SIGSTOP");
  CHECK(ShardsHeldBy(c, "ztaken", "n2") == 0);
  ::kill(c.nodes[1], SIGCONT);
  int code = WaitExitFor(c.nodes[1], 120);
  std::string log = ReadText(c.dir + "/n2/crawler.log");
  INFO(log.substr(log.size() > 20000 ? log.size() - 20000 : 0));
  CHECK(code == 1);  // it stops with an error: its work since the commit is void
  // Its lease renewal, and any acknowledge or commit it tried, refused.
  CHECK_THAT(log, Catch::Contains("lease renewal refused"));
  CHECK_THAT(log, Catch::Contains("taken by another node"));
  // Its last commit is still the checkpoint the takers started from: a
  // zombie commits nothing once it has seen its shards taken (a checkpoint
  // cut then names none of them, and would pass the fence).
  std::string committed = RedisCli(c.redis, "HGET crawler:{ztaken}:commits n2");
  committed = committed.substr(0, committed.find('\n'));
  std::string takers =
      ReadText(c.dir + "/n1/crawler.log") + ReadText(c.dir + "/n3/crawler.log");
  size_t sources = 0;
  const std::string from = "from node n2 checkpoint ";
  for (size_t at = takers.find(from); at != std::string::npos;
       at = takers.find(from, at + 1)) {
    size_t digits = takers.find_first_not_of("0123456789", at + from.size());
    std::string seq = takers.substr(at + from.size(), digits - at - from.size());
    INFO("a taker loaded n2's checkpoint " << seq << "; n2's last commit: " << committed);
    CHECK(seq == committed);
    ++sources;
  }
  CHECK(sources > 0);
  // Resumed: from its last committed checkpoint (its outputs cut back to
  // it), keeping none of the shards taken meanwhile; it ends with the job.
  // Redis is down as it starts (restarting too): a resumed node waits for it.
  c.redis.Kill();
  c.nodes[1] = Spawn(std::string(CRAWLER_BINARY) + " crawl --resume " + c.dir + "/n2",
                     c.dir + "/n2.out");
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  c.redis.Start();
  code = WaitExitFor(c.nodes[1], 600);
  log = ReadText(c.dir + "/n2/crawler.log");
  INFO(log.substr(log.size() > 20000 ? log.size() - 20000 : 0));
  CHECK(code == 0);
  CHECK_THAT(log, Catch::Contains("took over while it was away: left to them"));
  CHECK_THAT(log, Catch::Contains("trying again for up to 60 s"));
  WaitOthers(c);
  c.site.Stop();
  CHECK(std::filesystem::file_size(c.dir + "/n2/fetch-log.jsonl") ==
        CommittedLogBytes(c, "ztaken", "n2"));
  CheckUnionIsTruth(c.dir, c.truth);
}

// Chaos with shared_dir: nodes killed with -9 at random moments and resumed,
// redis-server killed twice, then one node leaves (SIGTERM) and another is
// killed for good; the last one finishes the crawl, taking over both.
TEST_CASE(
    "Cluster chaos with takeover: kill -9 of nodes (resumed), of redis-server, a leave "
    "and a death: the truth set, once",
    "[.][cluster][chaos]") {
  unsigned kills = EnvOr("CRAWLER_CHAOS_KILLS", 10);
  REQUIRE(kills >= 4);  // kills - 2 resumed (two with a Redis kill), a leave, a death
  ClusterCrawl c("cluster_chaos_takeover", "chaos2",
                 std::string(kTakeover) +
                     " --set cluster.lease_s=10 --set checkpoint.interval_s=0.5"
                     " --set frontier.min_delay_s=0.2 --set cluster.max_lag_batches=4"
                     " --set cluster.outbox_ram_urls=20",
                 EnvOr("CRAWLER_CHAOS_PAGES", 4000));
  std::mt19937 rng(20261124);
  std::uniform_int_distribution<int> pause_ms(600, 1800);
  std::vector<int> exits(kNodes.size(), -100);  // -100: running
  unsigned restarts = 0, redis_kills = 0;
  std::string left, dead;
  auto running = [&] {
    std::vector<size_t> r;
    for (size_t i = 0; i < kNodes.size(); ++i) {
      int status = 0;
      if (exits[i] == -100 && ::waitpid(c.nodes[i], &status, WNOHANG) != 0)
        exits[i] = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      if (exits[i] == -100) r.push_back(i);
    }
    return r;
  };
  WaitForCommit(c, "chaos2", "n1");
  for (unsigned event = 0; event < kills; ++event) {
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(rng)));
    std::vector<size_t> up = running();
    if (up.size() < 2) break;  // the crawl is (nearly) over
    size_t i = up[std::uniform_int_distribution<size_t>(0, up.size() - 1)(rng)];
    const std::string& name = kNodes[i];
    if (event == kills - 2) {  // a graceful leave
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
  for (size_t i = 0; i < kNodes.size(); ++i) {
    if (exits[i] == -100) exits[i] = WaitExitFor(c.nodes[i], 900);
    INFO(kNodes[i] << ": "
                   << ReadText(c.dir + "/" + kNodes[i] + ".out").substr(0, 20000));
    CHECK(exits[i] == 0);
  }
  c.site.Stop();
  INFO(restarts << " kills with resume, " << redis_kills << " redis kills, left: " << left
                << ", dead: " << dead);
  CHECK(restarts == kills - 2);
  CHECK(redis_kills == 2);
  CHECK(!left.empty());
  REQUIRE(!dead.empty());
  CheckUnionWithDead(c, "chaos2", dead);
}

}  // namespace
}  // namespace crawler::engine
