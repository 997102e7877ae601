// Death, leave and zombies with cluster.shared_dir (crawler/src/cluster.h):
// three nodes of the real binary, a real redis-server, crawler-testsite; one
// node is killed with -9 (not restarted), leaves on SIGTERM, or is paused
// past its lease while the others take its shards over. The oracle holds for
// the union of the nodes' fetch logs, a dead node's cut to its last
// committed checkpoint (what the takers started from).
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/redis.h"
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
// empty object while it has none. DIR: the crawl's directory (DIR/NODE/).
boost::json::object Committed(const RedisServer& redis, const std::string& dir,
                              const std::string& job, const std::string& node) {
  std::string seq = RedisCli(redis, "HGET crawler:{" + job + "}:commits " + node);
  if (seq.empty() || seq == "\n") return {};
  uint64_t want = std::stoull(seq);
  for (const char* d : {kCheckpointDir, kCheckpointPrevDir}) {
    auto m = ReadManifest(dir + "/" + node + "/" + d);
    if (m.ok() && m->at("sequence").to_number<uint64_t>() == want) return *m;
  }
  return {};
}
boost::json::object Committed(const ClusterCrawl& c, const std::string& job,
                              const std::string& node) {
  return Committed(c.redis, c.dir, job, node);
}

uint64_t CommittedLogBytes(const RedisServer& redis, const std::string& dir,
                           const std::string& job, const std::string& node) {
  boost::json::object m = Committed(redis, dir, job, node);
  return m.empty() ? 0 : m.at("fetch_log").at("bytes").to_number<uint64_t>();
}

uint64_t CommittedLogBytes(const ClusterCrawl& c, const std::string& job,
                           const std::string& node) {
  return CommittedLogBytes(c.redis, c.dir, job, node);
}

// Waits until NODE has committed a checkpoint with fetches in it.
void WaitForCommit(const RedisServer& redis, const std::string& dir,
                   const std::string& job, const std::string& node) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (CommittedLogBytes(redis, dir, job, node) == 0 &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(CommittedLogBytes(redis, dir, job, node) > 0);
}
void WaitForCommit(const ClusterCrawl& c, const std::string& job,
                   const std::string& node) {
  WaitForCommit(c.redis, c.dir, job, node);
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
    INFO(kNodes[i] << ": " << NodeOutput(c.dir, kNodes[i]));
    CHECK(code == 0);
  }
}

// The oracle with a node that died: its fetch log cut to its last committed
// checkpoint (what the takers started from), then the union of all.
void CheckUnionWithDead(const ClusterCrawl& c, const std::string& job,
                        const std::string& dead,
                        const std::vector<std::string>& nodes = kNodes) {
  // Its last commit's checkpoint is on disk (checkpoint/ or .prev/) if it
  // made one; it may hold no fetch yet (a node that joined and was killed
  // before it committed a page: the ASan chaos run did that), and then
  // nothing of its log counts (its takers started from the sources before).
  std::string seq = RedisCli(c.redis, "HGET crawler:{" + job + "}:commits " + dead);
  boost::json::object m = Committed(c, job, dead);
  INFO(dead << "'s last commit: '" << seq << "'");
  if (!seq.empty() && seq != "\n") REQUIRE(!m.empty());
  uint64_t keep = m.empty() ? 0 : m.at("fetch_log").at("bytes").to_number<uint64_t>();
  WARN(dead << "'s fetch log cut to its last commit: " << keep << " bytes");
  std::filesystem::resize_file(c.dir + "/" + dead + "/fetch-log.jsonl", keep);
  CheckUnionIsTruth(c.dir, c.truth, nodes);
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
  // The takeover time, printed (Catch2's WARN).
  WARN("n2's " << had << " shards taken over " << took << " s after its kill -9");
  CHECK(took <= kLease + 15);  // taken over within the lease TTL + 15 s
  WaitOthers(c);
  c.site.Stop();
  CheckUnionWithDead(c, "death", "n2");
  std::string logs =
      ReadText(c.dir + "/n1/crawler.log") + ReadText(c.dir + "/n3/crawler.log");
  CHECK_THAT(logs, Catch::Contains("took over"));
  CHECK_THAT(logs, Catch::Contains("from node n2 checkpoint"));
}

// The damaged-checkpoint tests below turn work-aware placement off. A give
// whose handoff checkpoint is the one damaged, loaded by its taker before
// the damage, is not what they test, and their oracle (n2's log cut to the
// checkpoint before) would not hold: that taker continues from the damaged
// one, so n2's pages of that shard since the one before are fetched once,
// by n2, and cut from its log (seen once in a Release CI run: 3 pages of
// shard 39 "missing"). docs/cluster.md lists that case as not handled for a resume.
constexpr const char* kNoGives = " --set cluster.balance=false";

// Stops `pid` (node `node` of `job`, its OUT `out`) at a moment when its
// checkpoint/ is its last committed checkpoint and checkpoint.prev/ the one
// before, holding fetches (not between a publish and its commit; 300 ms for
// a checkpoint writer, a child that SIGSTOP does not stop). Its committed
// sequence and the fetch log bytes of the one before; {0, 0} if no such
// moment came in 100 tries.
std::pair<uint64_t, uint64_t> StopWhenCommittedIsNewest(const RedisServer& redis,
                                                        const std::string& job,
                                                        const std::string& node,
                                                        const std::string& out,
                                                        pid_t pid) {
  for (int i = 0; i < 100; ++i) {
    ::kill(pid, SIGSTOP);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto cur = ReadManifest(out + "/" + kCheckpointDir);
    auto prev = ReadManifest(out + "/" + kCheckpointPrevDir);
    std::string seq = RedisCli(redis, "HGET crawler:{" + job + "}:commits " + node);
    const uint64_t committed = seq.empty() || seq == "\n" ? 0 : std::stoull(seq);
    if (cur.ok() && prev.ok() && committed > 0 &&
        cur->at("sequence").to_number<uint64_t>() == committed &&
        prev->at("sequence").to_number<uint64_t>() < committed &&
        prev->at("fetch_log").at("bytes").to_number<uint64_t>() > 0)  // it took part
      return {committed, prev->at("fetch_log").at("bytes").to_number<uint64_t>()};
    ::kill(pid, SIGCONT);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return {0, 0};
}

TEST_CASE(
    "Cluster with shared_dir: a resume that falls back to checkpoint.prev loses nothing "
    "though its shards' source is the damaged checkpoint",
    "[cluster][takeover]") {
  // n2 stopped when its checkpoint/ is its last committed one, killed -9,
  // that checkpoint damaged, and resumed at once: it falls back to
  // checkpoint.prev/, past the commit (if a node took its shards meanwhile,
  // it loads that one too). No balancing (kNoGives).
  ClusterCrawl c("cluster_prev_shared", "prevshared",
                 std::string(kTakeover) + " --set cluster.lease_s=3" + kNoGives);
  WaitForCommit(c, "prevshared", "n2");
  const std::string out = c.dir + "/n2";
  const uint64_t committed =
      StopWhenCommittedIsNewest(c.redis, "prevshared", "n2", out, c.nodes[1]).first;
  REQUIRE(committed > 0);
  ::kill(c.nodes[1], SIGKILL);
  ::waitpid(c.nodes[1], nullptr, 0);
  std::ofstream(out + "/checkpoint/MANIFEST.json", std::ios::trunc) << "{damaged";
  c.nodes[1] =
      Spawn(std::string(CRAWLER_BINARY) + " crawl --resume " + out, c.dir + "/n2.out");
  c.Finish();  // every page of the truth set fetched, each once
  const std::string n2 = NodeOutput(c.dir, "n2");
  CHECK_THAT(n2, Catch::Contains("resuming from the previous checkpoint"));
  CHECK_THAT(ReadText(out + "/crawler.log"),
             Catch::Contains("the last committed checkpoint, " +
                             std::to_string(committed) + ", is damaged"));
}

TEST_CASE(
    "Cluster death with its last committed checkpoint damaged: the takers load the "
    "one before (nothing Redis no longer keeps is newer); the truth set, once",
    "[cluster][takeover]") {
  ClusterCrawl c("cluster_death_damaged", "deathdmg",
                 std::string(kTakeover) + " --set cluster.lease_s=3" + kNoGives);
  WaitForCommit(c, "deathdmg", "n2");
  const std::string out = c.dir + "/n2";
  auto [committed, before_bytes] =
      StopWhenCommittedIsNewest(c.redis, "deathdmg", "n2", out, c.nodes[1]);
  REQUIRE(committed > 0);
  ::kill(c.nodes[1], SIGKILL);
  ::waitpid(c.nodes[1], nullptr, 0);
  std::ofstream(out + "/checkpoint/MANIFEST.json", std::ios::trunc) << "{damaged";
  SecondsUntilTaken(c, "deathdmg", "n2", 120);
  WaitOthers(c);
  c.site.Stop();
  // The takers started from the checkpoint before the damaged one: n2's log
  // counts up to it, and its pages since were fetched again by them.
  std::filesystem::resize_file(out + "/fetch-log.jsonl", before_bytes);
  CheckUnionIsTruth(c.dir, c.truth);
  std::string logs =
      ReadText(c.dir + "/n1/crawler.log") + ReadText(c.dir + "/n3/crawler.log");
  CHECK_THAT(logs, Catch::Contains("checkpoint " + std::to_string(committed) +
                                   " is damaged: its shards are loaded from"));
}

// Spawns n4 into the running job of `c` with `extra`, and stops it (SIGSTOP)
// the moment its first commit that holds shards is committed: every shard
// in it came by handoff after its checkpoint before. Returns that sequence.
uint64_t JoinAndStopAtFirstCommit(ClusterCrawl& c, const std::string& job,
                                  const std::string& extra, pid_t* n4) {
  *n4 = Spawn(NodeCommand(c.dir, c.redis.Url(), job, "n4",
                          c.resolve + " " + WithDir(extra, c.dir) +
                              " --set checkpoint.interval_s=4"),
              c.dir + "/n4.out");
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < until) {
    std::string all = RedisCli(c.redis, "HVALS crawler:{" + job + "}:source");
    size_t at = all.find("n4 ");
    if (at != std::string::npos && (at == 0 || all[at - 1] == '\n')) {
      ::kill(*n4, SIGSTOP);
      return std::stoull(all.substr(at + 3));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return 0;
}

// Shards move by handoff (a long lease), and n4 cuts every 4 s: its first
// commit that holds shards is its newest long enough to stop it there.
constexpr const char* kJoinDamaged =
    " --set cluster.lease_s=30 --set frontier.min_delay_s=0.2 --set "
    "cluster.balance=false";

// n4 joins the crawl of `c` (with `extra`), is killed -9 right after its
// first commit that holds shards, and that checkpoint is damaged. Returns
// {its sequence, the fetch log bytes of n4's checkpoint before it}.
std::pair<uint64_t, uint64_t> JoinKillAndDamage(ClusterCrawl& c, const std::string& job,
                                                const std::string& extra) {
  WaitForCommit(c, job, "n1");
  pid_t n4 = 0;
  const uint64_t first = JoinAndStopAtFirstCommit(c, job, extra, &n4);
  REQUIRE(first > 0);
  const std::string out = c.dir + "/n4";
  auto cur = ReadManifest(out + "/" + kCheckpointDir);
  auto prev = ReadManifest(out + "/" + kCheckpointPrevDir);
  REQUIRE(cur.ok());
  REQUIRE(prev.ok());
  REQUIRE(cur->at("sequence").to_number<uint64_t>() == first);  // not cut on since
  // Redis keeps where each of its shards came from, and the givers their
  // handoff checkpoints while it names them.
  std::string from = RedisCli(c.redis, "HVALS crawler:{" + job + "}:source_prev");
  INFO("source_prev: " << from);
  CHECK(from.find("n4 ") == std::string::npos);
  CHECK(!from.empty());
  ::kill(n4, SIGKILL);
  ::waitpid(n4, nullptr, 0);
  std::ofstream(out + "/" + kCheckpointDir + "/MANIFEST.json", std::ios::trunc)
      << "{damaged";
  return {first, prev->at("fetch_log").at("bytes").to_number<uint64_t>()};
}

TEST_CASE(
    "Cluster join: the newcomer's first checkpoint holding shards is damaged; resumed, "
    "it "
    "loads them from the givers' kept handoff checkpoints, not from the one before; the "
    "truth set, once",
    "[cluster][takeover][join]") {
  ClusterCrawl c("cluster_join_damaged", "joindmg", std::string(kTakeover) + kJoinDamaged,
                 1000);
  const uint64_t first =
      JoinKillAndDamage(c, "joindmg", std::string(kTakeover) + kJoinDamaged).first;
  const std::string out = c.dir + "/n4";
  pid_t n4 =
      Spawn(std::string(CRAWLER_BINARY) + " crawl --resume " + out, c.dir + "/n4.out");
  int code = WaitExitFor(n4, 600);
  INFO("n4: " << NodeOutput(c.dir, "n4"));
  CHECK(code == 0);
  WaitOthers(c);
  CHECK(WaitExitFor(c.nodes[1], 600) == 0);
  c.site.Stop();
  CheckUnionIsTruth(c.dir, c.truth, {"n1", "n2", "n3", "n4"});
  const std::string log = ReadText(out + "/crawler.log");
  CHECK_THAT(log, Catch::Contains("the last committed checkpoint, " +
                                  std::to_string(first) + ", is damaged"));
  // Taken from another node's checkpoint, not restored from its own.
  const size_t resumed = log.find("resuming from checkpoint.prev");
  REQUIRE(resumed != std::string::npos);
  const size_t took = log.find("(the first from checkpoint 'n", resumed);
  REQUIRE(took != std::string::npos);
  CHECK(log.compare(took + 28, 3, "n4 ") != 0);
}

TEST_CASE(
    "Cluster join: the newcomer killed -9 with its first checkpoint holding shards "
    "damaged, not restarted: the takers load its shards from the givers' kept handoff "
    "checkpoints; the truth set, once",
    "[cluster][takeover][join]") {
  ClusterCrawl c("cluster_join_damaged_death", "joindmgd",
                 std::string(kTakeover) + kJoinDamaged, 1000);
  // n4's lease 5 s: its shards are taken soon after its death.
  const uint64_t before_bytes = JoinKillAndDamage(c, "joindmgd",
                                                  std::string(kTakeover) + kJoinDamaged +
                                                      " --set cluster.lease_s=5")
                                    .second;
  SecondsUntilTaken(c, "joindmgd", "n4", 120);
  WaitOthers(c);
  CHECK(WaitExitFor(c.nodes[1], 600) == 0);
  c.site.Stop();
  // The takers started from the givers' checkpoints: n4's log counts up to
  // its checkpoint before the damaged one; its pages since were fetched again.
  // (Its checkpoint before, cut before it held a shard, may hold no fetch.)
  std::filesystem::resize_file(c.dir + "/n4/fetch-log.jsonl", before_bytes);
  CheckUnionIsTruth(
      c.dir, c.truth,
      before_bytes > 0 ? std::vector<std::string>{"n1", "n2", "n3", "n4"} : kNodes);
  CHECK_THAT(c.Logs(), Catch::Contains("is damaged and the one before lacks shard"));
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
  INFO(NodeOutput(c.dir, "n2"));
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
    "Cluster partition: a node cut off from Redis past its lease (a TCP proxy that "
    "stops forwarding) is fenced when it heals: its outputs cut back to its last "
    "commit, it exits; each page once in the fetch logs and WARCs; never two nodes on "
    "a host at once",
    "[cluster][takeover]") {
  // n2 reaches Redis through a proxy. Cut: nothing passes, nothing is closed
  // (its Redis commands time out; it keeps its hosts until its lease lapses
  // by its own clock). The others take its shards over from its last commit.
  ClusterCrawl c("cluster_partition", "part",
                 std::string(kTakeover) + " --set cluster.lease_s=3",
                 EnvOr("CRAWLER_CLUSTER_PAGES", 2000), "", "", "n2");
  WaitForCommit(c, "part", "n2");
  c.proxy->Cut();
  double took = SecondsUntilTaken(c, "part", "n2", 120);
  INFO("n2's shards taken over " << took << " s after the cut");
  REQUIRE(ShardsHeldBy(c, "part", "n2") == 0);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // the takers fetch its hosts
  c.proxy->Heal();
  int code = WaitExitFor(c.nodes[1], 120);
  std::string log = ReadText(c.dir + "/n2/crawler.log");
  INFO(log.substr(log.size() > 20000 ? log.size() - 20000 : 0));
  CHECK(code == 1);  // fenced: its work since its last commit is void
  CHECK_THAT(log, Catch::Contains("taken by another node"));
  CHECK_THAT(log, Catch::Contains("outputs cut back to checkpoint"));
  WaitOthers(c);
  c.site.Stop();
  // Its fetch log and WARC end at its last commit (what the takers loaded).
  CHECK(std::filesystem::file_size(c.dir + "/n2/fetch-log.jsonl") ==
        CommittedLogBytes(c, "part", "n2"));
  CheckUnionIsTruth(c.dir, c.truth);
  for (const std::string& n : kNodes) {
    INFO(n);
    CHECK(WarcNotAsLogged(c.dir + "/" + n).empty());
  }
  CheckPoliteness(c.site.Requests(), 0.05);  // kTakeover's min_delay_s
}

TEST_CASE(
    "Cluster zombie: a node paused past its lease while the others take its shards "
    "over is refused, commits nothing more and stops when it wakes; resumed from its "
    "last commit, it ends with the job; the truth set, once",
    "[cluster][takeover]") {
  // No balancing: a give just before the pause would be loaded from the
  // handoff's checkpoint, older than n2's last commit, and the check below
  // is of takeovers (one such give failed it in a Release run under -j2).
  ClusterCrawl c(
      "cluster_zombie_taken", "ztaken",
      std::string(kTakeover) + " --set cluster.lease_s=3" + kLongTimeouts + kNoGives);
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
  // (Their info lines reach the file within 2 s: spdlog's flush_every.)
  std::string takers;
  for (int i = 0; i < 100 && takers.find("from node n2 checkpoint ") == std::string::npos;
       ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    takers = ReadText(c.dir + "/n1/crawler.log") + ReadText(c.dir + "/n3/crawler.log");
  }
  size_t sources = 0;
  for (size_t at = takers.find("from node n2 checkpoint "); at != std::string::npos;
       at = takers.find("from node n2 checkpoint ", at + 1)) {
    std::string seq =
        takers.substr(at + 24, takers.find_first_not_of("0123456789", at + 24) - at - 24);
    INFO("a taker loaded n2's checkpoint " << seq << "; n2's last commit: " << committed);
    CHECK(seq == committed);
    ++sources;
  }
  CHECK(sources > 0);
  // Resumed: from its last committed checkpoint (its outputs cut back to
  // it), keeping none of the shards taken meanwhile (they come back to it by
  // handoff once it is live again); it ends with the job.
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

TEST_CASE(
    "Cluster join: a fourth node joins a running crawl; the shards the placement "
    "gives it are handed over (drained, checkpointed, given up, taken over); no URL is "
    "requested twice, no host by two nodes at once; the truth set, once",
    "[cluster][takeover][join]") {
  // A long lease: the shards move by handoff, not by expiry. A politeness
  // delay long enough that the crawl is still running when n4 has its share.
  // No work-aware placement: n4, idle as it joins, would be given more than
  // the placement's share (cluster_balance_test.cc tests that).
  const std::string extra = std::string(kTakeover) +
                            " --set cluster.lease_s=30 --set frontier.min_delay_s=0.3"
                            " --set cluster.balance=false";
  ClusterCrawl c("cluster_join", "join", extra,
                 std::max(1000u, EnvOr("CRAWLER_CLUSTER_PAGES", 2000)));
  WaitForCommit(c, "join", "n1");
  // The shards n4 should end with: the placement over all four, by the
  // job's seed hosts per shard (shard_owners.h).
  const std::vector<std::string> four = {"n1", "n2", "n3", "n4"};
  std::string weights = RedisCli(c.redis, "HGET crawler:{join}:meta weights");
  weights.erase(weights.find_last_not_of("\r\n") + 1);
  REQUIRE(!weights.empty());
  const std::vector<uint32_t> owner = PlaceShards(four, DecodeWeights(weights, 64), 64);
  size_t expected = 0;
  for (uint32_t s = 0; s < 64; ++s) expected += four[owner[s]] == "n4";
  REQUIRE(expected > 0);
  auto start = std::chrono::steady_clock::now();
  pid_t n4 = Spawn(NodeCommand(c.dir, c.redis.Url(), "join", "n4",
                               c.resolve + " " + WithDir(extra, c.dir)),
                   c.dir + "/n4.out");
  while (ShardsHeldBy(c, "join", "n4") < expected &&
         Seconds(std::chrono::steady_clock::now() - start).count() < 120 &&
         ::waitpid(n4, nullptr, WNOHANG) == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  double took = Seconds(std::chrono::steady_clock::now() - start).count();
  size_t held = ShardsHeldBy(c, "join", "n4");
  // The time the joiner took to hold its shards, printed (Catch2's WARN).
  WARN("n4 held " << held << " of its " << expected << " shards " << took
                  << " s after it started");
  CHECK(held == expected);
  int code = WaitExitFor(n4, 600);
  INFO("n4: " << NodeOutput(c.dir, "n4"));
  CHECK(code == 0);
  WaitOthers(c);
  int n2 = WaitExitFor(c.nodes[1], 600);
  {
    INFO("n2: " << NodeOutput(c.dir, "n2"));
    CHECK(n2 == 0);
  }
  c.site.Stop();
  CheckUnionIsTruth(c.dir, c.truth, four);
  // Each URL answered once at the server (a handoff drains before its
  // checkpoint: nothing is fetched again; failures fetched again aside), and
  // no host by two nodes at once.
  std::vector<ServedRequest> answered = c.site.FinalRequests();
  std::set<std::string> urls;
  for (const ServedRequest& q : answered) urls.insert(q.Url());
  CHECK(urls.size() == answered.size());
  CheckPoliteness(c.site.Requests(), 0.3);
  CHECK_THAT(c.Logs(), Catch::Contains("handed"));
  CHECK_THAT(ReadText(c.dir + "/n4/crawler.log"), Catch::Contains("took over"));
}

// Pages in the nodes' fetch logs (lines), all together.
size_t FetchedLines(const ClusterCrawl& c) {
  size_t n = 0;
  for (const std::string& node : kNodes) {
    std::string log = ReadText(c.dir + "/" + node + "/fetch-log.jsonl");
    n += static_cast<size_t>(std::count(log.begin(), log.end(), '\n'));
  }
  return n;
}

TEST_CASE(
    "Cluster end-of-crawl death: a node killed -9 at 95% of the pages is not restarted; "
    "its taker counts as busy from the moment it takes its shards, through a slow load "
    "beside its heartbeats, so the job does not end without them and no lease lapses; "
    "the truth set, once",
    "[cluster][takeover]") {
  // n1's loads take 4 s (a test hook, as a big shard would): it holds
  // shards it has not loaded for that long, while n3 takes its part of n2's
  // shards at once. The load runs beside n1's exchange thread: its
  // heartbeats and lease renewals (lease_s 3) keep their period.
  ::setenv("CRAWLER_TEST_TAKEOVER_LOAD_MS", "n1:4000", 1);
  ClusterCrawl c("cluster_end_death", "enddeath",
                 std::string(kTakeover) + " --set cluster.lease_s=3",
                 std::max(1000u, EnvOr("CRAWLER_CLUSTER_PAGES", 2000)));
  ::unsetenv("CRAWLER_TEST_TAKEOVER_LOAD_MS");
  WaitForCommit(c, "enddeath", "n2");
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while (FetchedLines(c) < c.truth.size() * 19 / 20 &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ::kill(c.nodes[1], SIGKILL);
  ::waitpid(c.nodes[1], nullptr, 0);
  WaitOthers(c);
  c.site.Stop();
  CheckUnionWithDead(c, "enddeath", "n2");
  const std::string n1_log = ReadText(c.dir + "/n1/crawler.log");
  CHECK_THAT(n1_log, Catch::Contains("in 4.0"));  // "loaded N shards ... in 4.0xx s"
  CHECK_THAT(n1_log + ReadText(c.dir + "/n3/crawler.log"), Catch::Contains("took over"));
  // No lease of n1 lapsed during its 4 s load (they did when it ran on the
  // exchange thread: "leases of 33 shards taken again").
  CHECK(boost::json::parse(ReadText(c.dir + "/n1/stats.json"))
            .at("cluster")
            .at("lease_losses")
            .to_number<uint64_t>() == 0);
  CHECK_THAT(n1_log, !Catch::Contains("taken again"));
}

// Waits up to `limit` s until NODE's crawler.log contains `what`.
bool WaitForLog(const ClusterCrawl& c, const std::string& node, const std::string& what,
                double limit) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit);
  while (ReadText(c.dir + "/" + node + "/crawler.log").find(what) == std::string::npos) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// The heartbeats of `nodes`, watched through their liveness keys (each
// heartbeat sets alive:NODE with a TTL; its PTTL jumps back up then), until
// `done` says stop: the longest time between two heartbeats of each node.
std::map<std::string, double> LongestHeartbeatGaps(const RedisServer& redis,
                                                   const std::string& job,
                                                   const std::vector<std::string>& nodes,
                                                   const std::function<bool()>& done) {
  auto address = ParseRedisUrl(redis.Url());
  REQUIRE(address.ok());
  auto r = Redis::Connect(*address, 5);
  REQUIRE(r.ok());
  std::map<std::string, long long> last_ttl;
  std::map<std::string, std::chrono::steady_clock::time_point> last_beat;
  std::map<std::string, double> longest;
  auto checked = std::chrono::steady_clock::now();
  while (true) {
    auto now = std::chrono::steady_clock::now();
    for (const std::string& n : nodes) {
      auto ttl = (*r)->Command({"PTTL", "crawler:{" + job + "}:alive:" + n});
      REQUIRE(ttl.ok());
      long long t = ttl->Int();
      if (last_ttl.count(n) > 0 && t > last_ttl[n]) {  // a heartbeat since
        if (last_beat.count(n) > 0)
          longest[n] = std::max(longest[n], Seconds(now - last_beat[n]).count());
        last_beat[n] = now;
      }
      last_ttl[n] = t;
    }
    if (now - checked > std::chrono::milliseconds(200)) {
      if (done()) break;
      checked = now;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return longest;
}

// A taker loads a dead node's shards on a thread of
// its own, so a big shard does not hold up its heartbeats and lease
// renewals (on the exchange thread, a big load stalled them past the
// liveness TTL: the taker looked dead too, and the takeovers cascaded).
TEST_CASE(
    "Cluster takeover of a big shard: 200,000 queued URLs of one host load while the "
    "taker's heartbeats keep their period",
    "[cluster][takeover]") {
  constexpr unsigned kBig = 200000;
  // heartbeat_s 0.25: liveness is 3 heartbeats, 0.75 s.
  const double kHeartbeat = 0.25;
  const std::string dir = TempDir("cluster_big_shard");
  RedisServer redis(dir + "/redis");
  TestSite site(VirtualHosts(200), dir + "/requests.log");
  std::string resolve = WriteSeedsAndResolve(site, dir);
  // One host gets 200,000 more seeds (paths it answers 404 to); at 5
  // fetches a second they stay queued, in the one shard of that host.
  std::string root = ReadText(dir + "/seeds.txt");
  root = root.substr(0, root.find('\n'));
  {
    std::ofstream seeds(dir + "/seeds.txt", std::ios::app);
    for (unsigned i = 0; i < kBig; ++i) seeds << root << "big/" << i << "\n";
  }
  // Leases of 10 s: the start (three nodes admitting 200,000 seeds each,
  // two shipping them to the third) stalled exchange threads past a 3 s
  // lease under ASan with another test beside it, and the nodes fenced.
  const std::string extra = std::string(kTakeover) +
                            " --set cluster.lease_s=10 --set frontier.min_delay_s=0.2"
                            " --set cluster.heartbeat_s=0.25"
                            " --set crawl.max_pages_per_host=1000000"
                            " --set dedup.capacity=600000";
  // Every load also sleeps 1.5 s (a test hook: a slow disk), so that it
  // spans several heartbeats whatever the machine: 200,000 URLs alone took
  // 0.2 s on an idle machine and 0.7-1.2 s on a busy one.
  ::setenv("CRAWLER_TEST_TAKEOVER_LOAD_MS", "*:1500", 1);
  std::vector<pid_t> nodes =
      StartNodes(dir, redis, "big", resolve + " " + WithDir(extra, dir));
  ::unsetenv("CRAWLER_TEST_TAKEOVER_LOAD_MS");
  // The node fetching that host holds the big shard.
  std::string owner;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (owner.empty() && std::chrono::steady_clock::now() < until) {
    for (const std::string& n : kNodes)
      if (ReadText(dir + "/" + n + "/fetch-log.jsonl").find(root + "big/") !=
          std::string::npos)
        owner = n;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(!owner.empty());
  // Its checkpoint with the big queue committed, it dies.
  WaitForCommit(redis, dir, "big", owner);
  size_t dead = std::find(kNodes.begin(), kNodes.end(), owner) - kNodes.begin();
  ::kill(nodes[dead], SIGKILL);
  ::waitpid(nodes[dead], nullptr, 0);
  std::vector<std::string> takers;
  for (const std::string& n : kNodes)
    if (n != owner) takers.push_back(n);
  // The others' heartbeats, watched from the kill until the big shard is
  // loaded (the log line) and 2 s more.
  const std::string loaded = "shards from node " + owner + " checkpoint ";
  std::string taker;
  double load_s = 0;  // how long the big shard's load took (its log line)
  std::chrono::steady_clock::time_point loaded_at;
  const auto killed = std::chrono::steady_clock::now();
  auto gaps = LongestHeartbeatGaps(redis, "big", takers, [&] {
    auto now = std::chrono::steady_clock::now();
    for (size_t n = 0; n < takers.size() && taker.empty(); ++n) {
      // "loaded K shards from node N checkpoint S in T s: H hosts, U URLs
      // queued", one line (not "took over K shards from node N checkpoint S:
      // ...", whose next " in " is another line's: a CI run read 0.057 s).
      std::string log = ReadText(dir + "/" + takers[n] + "/crawler.log");
      for (size_t at = log.find(loaded); at != std::string::npos;
           at = log.find(loaded, at + 1)) {
        const size_t bol = log.rfind('\n', at) + 1, eol = log.find('\n', at);
        const std::string line = log.substr(bol, eol - bol);
        size_t in = line.find(" in "), q = line.find(" URLs queued");
        if (line.find("cluster: loaded ") == std::string::npos ||
            in == std::string::npos || q == std::string::npos)
          continue;
        size_t comma = line.rfind(", ", q);
        if (std::stoull(line.substr(comma + 2)) < kBig) continue;
        taker = takers[n];
        load_s = std::stod(line.substr(in + 4));
        loaded_at = now;
      }
    }
    if (!taker.empty()) return now - loaded_at > std::chrono::seconds(2);
    return now - killed > std::chrono::seconds(180);
  });
  for (pid_t p : nodes) ::kill(p, SIGKILL);
  for (size_t i = 0; i < nodes.size(); ++i)
    if (i != dead) ::waitpid(nodes[i], nullptr, 0);
  std::string logs;
  for (const std::string& n : takers) logs += ReadText(dir + "/" + n + "/crawler.log");
  INFO(logs.substr(logs.size() > 6000 ? logs.size() - 6000 : 0));
  // Never done meanwhile: 200,000 URLs of one host wait at 5 pages/s. (The
  // job was marked done at its start, between the nodes' Start and their
  // seeding, in 13 of 15 runs before the engine counted seeding as work.)
  CHECK_THAT(logs, !Catch::Contains("cluster: job big is done"));
  REQUIRE(!taker.empty());  // the big shard was taken over, whole
  for (const std::string& n : takers) {
    // The heartbeat gaps, printed (Catch2's WARN).
    WARN(n << ": longest time between heartbeats " << gaps[n] << " s, from the kill of "
           << owner << " until 2 s after " << taker << " loaded its big shard in "
           << load_s << " s");
    CHECK(gaps[n] > 0);  // heartbeats were seen
    // Never past the liveness TTL, when the node looks dead. Before the
    // backlog was read in chunks and the exchange thread stopped waiting at
    // the checkpoint gate, the taker's longest gap was 1.0-1.3 s in Release
    // (seen: at most 0.31 s since, under ASan with another test beside it).
    CHECK(gaps[n] < 3 * kHeartbeat);
  }
  // The taker's heartbeats went on while it loaded: with the load on the
  // exchange thread its longest gap was the load's time and more.
  CHECK(gaps[taker] < load_s);
  // No node looked dead but the one killed: no taker's lease expired or
  // was taken from it. (A taker may load shards from the other's
  // checkpoint: the placement over two nodes differs from over three for a
  // few shards besides the dead node's, and those are handed over.)
  CHECK_THAT(logs, !Catch::Contains("shards expired (not renewed"));
  CHECK_THAT(logs, !Catch::Contains("had expired unnoticed"));
  CHECK_THAT(logs, !Catch::Contains("shards lost"));
}

TEST_CASE(
    "Cluster handoff interrupted: a node hands shards to a joining node that dies at "
    "once, is killed -9 itself before anyone took them, and resumes: it takes them "
    "back from its handoff checkpoint; the truth set, once",
    "[cluster][takeover][join]") {
  // The chaos run found it: the resumed node took its released shards as
  // empty ones (their queues were in handoff/SEQ/ only), 553 URLs lost.
  // n4 is stopped (SIGSTOP) as soon as n2 starts handing to it, and its
  // liveness key is kept in Redis by the test until n2 has given the shards
  // up, committed once more and been killed: n4 stays a member that never
  // takes anything, whatever the machine's load. (Killed at once with a
  // membership of 3 heartbeats, n4 expired before n2 had given anything up
  // in a CI run's ASan pass: n2 kept the shards and the test saw nothing.)
  const std::string extra =
      std::string(kTakeover) + " --set cluster.lease_s=10 --set cluster.heartbeat_s=2";
  ClusterCrawl c("cluster_handback", "handback", extra,
                 std::max(1000u, EnvOr("CRAWLER_CLUSTER_PAGES", 2000)));
  WaitForCommit(c, "handback", "n2");
  pid_t n4 = Spawn(NodeCommand(c.dir, c.redis.Url(), "handback", "n4",
                               c.resolve + " " + WithDir(extra, c.dir)),
                   c.dir + "/n4.out");
  // n2 starts handing shards to n4: n4 is frozen before it can take them,
  // and stays alive in Redis's eyes.
  REQUIRE(WaitForLog(c, "n2", "over to node n4: draining", 60));
  ::kill(n4, SIGSTOP);
  const std::string alive = "crawler:{handback}:alive:n4";
  REQUIRE(RedisCli(c.redis, "PEXPIRE " + alive + " 600000").find('1') !=
          std::string::npos);
  // n2 gives the first of them up (checkpoint kept in handoff/SEQ/, its
  // queue dropped here), commits one more checkpoint (which does not hold
  // them), and dies too, before n4's death is seen and the shards come
  // back to it.
  REQUIRE(WaitForLog(c, "n2", "leases given up", 120));
  ::kill(n4, SIGKILL);
  ::waitpid(n4, nullptr, 0);
  auto commit = [&] {
    std::string seq = RedisCli(c.redis, "HGET crawler:{handback}:commits n2");
    return seq.empty() || seq == "\n" ? 0ull : std::stoull(seq);
  };
  const uint64_t handoff = commit();
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (commit() <= handoff && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(commit() > handoff);
  ::kill(c.nodes[1], SIGKILL);
  ::waitpid(c.nodes[1], nullptr, 0);
  c.nodes[1] = Spawn(std::string(CRAWLER_BINARY) + " crawl --resume " + c.dir + "/n2",
                     c.dir + "/n2.resumed.out");
  // Now n4's death is seen: its membership ends.
  RedisCli(c.redis, "DEL " + alive);
  int code = WaitExitFor(c.nodes[1], 600);
  INFO("n2: " << NodeOutput(c.dir, "n2.resumed"));
  CHECK(code == 0);
  WaitOthers(c);
  c.site.Stop();
  // The union is the truth set: the handed shards' queues were not lost.
  // n4 committed nothing (killed at its start), or a few pages.
  std::vector<std::string> nodes = kNodes;
  if (CommittedLogBytes(c, "handback", "n4") > 0) nodes.push_back("n4");
  CheckUnionWithDead(c, "handback", "n4", nodes);
}

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
  const std::string extra =
      std::string(kTakeover) +
      " --set cluster.lease_s=10 --set checkpoint.interval_s=0.5"
      " --set frontier.min_delay_s=0.2 --set cluster.max_lag_batches=4"
      " --set cluster.outbox_ram_urls=20";
  ClusterCrawl c("cluster_chaos_takeover", "chaos2", extra,
                 EnvOr("CRAWLER_CHAOS_PAGES", 4000));
  const std::vector<std::string> names = {"n1", "n2", "n3", "n4"};
  std::mt19937 rng(20261124);
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
      while (RedisCli(c.redis, "HGET crawler:{chaos2}:commits n4").size() < 2 &&
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
      const std::string before = RedisCli(c.redis, commits);
      auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (RedisCli(c.redis, commits) == before &&
             std::chrono::steady_clock::now() < until)
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
  // One deadline for all (a run takes ~60 s after the events in Release): a
  // node that hangs fails the test in 10 minutes, with its log's end.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(600);
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

TEST_CASE(
    "Cluster resume after a join: a node killed -9 while a fourth joins resumes; its "
    "shards with no hosts left, now the newcomer's, are taken from its resumed "
    "checkpoint, kept after it cut on; the truth set, once",
    "[cluster][takeover][join]") {
  // The chaos run found it: the resumed node took at once only the shards
  // its checkpoint had hosts of (and those rendezvous hashing gave it); one
  // with none, whose lease expired later, was to be loaded from that
  // checkpoint, which its next cuts had rotated away: "no checkpoint 9",
  // tried forever. 512 shards for 200 hosts: most shards have none.
  const std::string extra = std::string(kTakeover) +
                            " --set cluster.lease_s=15 --set cluster.shards=512"
                            " --set frontier.min_delay_s=0.3";
  ClusterCrawl c("cluster_resume_join", "rejoin", extra,
                 std::max(1000u, EnvOr("CRAWLER_CLUSTER_PAGES", 2000)));
  WaitForCommit(c, "rejoin", "n2");
  ::kill(c.nodes[1], SIGKILL);
  ::waitpid(c.nodes[1], nullptr, 0);
  auto killed = std::chrono::steady_clock::now();
  pid_t n4 = Spawn(NodeCommand(c.dir, c.redis.Url(), "rejoin", "n4",
                               c.resolve + " " + WithDir(extra, c.dir)),
                   c.dir + "/n4.out");
  // n2 comes back once n4 is in the job, before its own leases expire.
  auto until = killed + std::chrono::seconds(10);
  while (RedisCli(c.redis, "HGET crawler:{rejoin}:commits n4").size() < 2 &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  c.nodes[1] = Spawn(std::string(CRAWLER_BINARY) + " crawl --resume " + c.dir + "/n2",
                     c.dir + "/n2.resumed.out");
  double away = Seconds(std::chrono::steady_clock::now() - killed).count();
  REQUIRE(away < 15);  // else n2's leases expired: not the case under test
  REQUIRE(WaitForLog(c, "n2", "resumed from", 30));
  std::string log = ReadText(c.dir + "/n2/crawler.log");
  size_t at = log.find("(checkpoint ", log.find("resumed from"));
  REQUIRE(at != std::string::npos);
  const std::string resumed =
      log.substr(at + 12, log.find_first_not_of("0123456789", at + 12) - at - 12);
  // n4 takes the shards n2's checkpoint held and n2 did not take back, from
  // that checkpoint, after n2 has cut on (checkpoint.interval_s=1, lease 15 s).
  const std::string loaded = "shards from node n2 checkpoint " + resumed + " in ";
  CHECK(WaitForLog(c, "n4", loaded, 60));
  int code = WaitExitFor(n4, 600);
  INFO("n4: " << NodeOutput(c.dir, "n4"));
  CHECK(code == 0);
  CHECK_THAT(ReadText(c.dir + "/n4/crawler.log"), !Catch::Contains("cannot take over"));
  code = WaitExitFor(c.nodes[1], 600);
  INFO("n2: " << NodeOutput(c.dir, "n2.resumed"));
  CHECK(code == 0);
  WaitOthers(c);
  c.site.Stop();
  // The kept copy is gone once no shard's source names it.
  CHECK_THAT(ReadText(c.dir + "/n2/crawler.log"),
             Catch::Contains("kept checkpoint " + resumed + " removed"));
  CheckUnionIsTruth(c.dir, c.truth, {"n1", "n2", "n3", "n4"});
}

// [recrawl] in a cluster: full 200 captures in `records`, by URL, in time
// order (WARC-Date), each with its node.
struct Capture {
  std::string date, node, type, etag, id;
};
void AddRecords(const std::string& node, const std::vector<testing::WarcRecord>& records,
                std::map<std::string, std::vector<Capture>>* by_url) {
  for (const testing::WarcRecord& r : records)
    if ((r.type == "response" && r.status == "200") || r.type == "revisit")
      (*by_url)[r.uri].push_back({r.date, node, r.type, r.etag, r.id});
}

// Waits until the crawl in OUT has revisited as many pages as its history
// holds (its stats.json, written every 2 s): its first pass is over.
bool WaitForRevisits(const std::string& out, double limit_s) {
  auto until = std::chrono::steady_clock::now() + Seconds(limit_s);
  while (std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(ReadText(out + "/stats.json"), ec);
    if (ec || !v.is_object() || !v.as_object().contains("crawl")) continue;
    const boost::json::object& c = v.at("crawl").as_object();
    uint64_t history = 0;
    for (const auto& [bucket, n] : c.at("revisit_intervals").as_object())
      history += n.to_number<uint64_t>();
    const uint64_t revisits = c.at("revisits_not_modified").to_number<uint64_t>() +
                              c.at("revisits_identical").to_number<uint64_t>() +
                              c.at("revisits_changed").to_number<uint64_t>();
    if (history > 20 && revisits >= history) return true;
  }
  return false;
}

// Microseconds of CLOCK_MONOTONIC, the testsite's request log's clock.
uint64_t MonotonicUs() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000 +
         static_cast<uint64_t>(t.tv_nsec) / 1000;
}

// Waits (up to `limit_s`) until the site has been asked for each of `urls`
// since `since_us` (MonotonicUs); returns those it has not.
std::vector<std::string> NotRequestedSince(const TestSite& site,
                                           const std::map<std::string, std::string>& urls,
                                           uint64_t since_us, double limit_s) {
  auto until = std::chrono::steady_clock::now() + Seconds(limit_s);
  std::vector<std::string> missing;
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::set<std::string> asked;
    for (const testing::ServedRequest& q : site.Requests())
      if (q.start_us > since_us) asked.insert(q.Url());
    missing.clear();
    for (const auto& [url, etag] : urls)
      if (!asked.contains(url)) missing.push_back(url);
  } while (!missing.empty() && std::chrono::steady_clock::now() < until);
  return missing;
}

// URL history records loaded from `node`'s checkpoints, by the log lines
// "loaded N shards from node NODE checkpoint Q in T s: ..., K URL history
// records" in `log`.
uint64_t LoadedHistoryFrom(const std::string& log, const std::string& node) {
  uint64_t records = 0;
  const std::string from = "shards from node " + node + " checkpoint ";
  for (size_t at = log.find(from); at != std::string::npos; at = log.find(from, at + 1)) {
    const size_t end = log.find(" URL history records", at);
    if (end == std::string::npos || log.find('\n', at) < end) continue;
    const size_t start = log.rfind(' ', end - 1) + 1;
    records += std::stoull(log.substr(start, end - start));
  }
  return records;
}

TEST_CASE(
    "Cluster recrawl: a shard's URL history moves with it: after a leave, the takers "
    "revisit the leaver's pages with conditional GETs whose revisit records refer to "
    "its captures; resumed, it gets shards back by handoff, history and all",
    "[cluster][takeover][recrawl]") {
  // Pages change every 60 s on average: most revisits are 304s. The test
  // stops n1 and n3 (SIGINT); max_duration_s only bounds a failed run. It
  // must outlast the test's own waits (at most 300 + 120 + 60 + 90 + 120 s
  // below): at 120 s, an ASan CI run whose first pass and leave took ~130 s
  // saw n1 and n3 stop before they revisited n2's pages (the check below
  // failed, 242 s into the test).
  ClusterCrawl c("cluster_recrawl", "recrawl",
                 std::string(kTakeover) +
                     " --set cluster.lease_s=30 --set recrawl.enabled=true"
                     " --set recrawl.interval_s=3 --set recrawl.min_interval_s=1"
                     " --set recrawl.max_interval_s=6 --set crawl.max_duration_s=900",
                 400, "", "--change-mean-s 60");
  // The first pass over, on every node: from then on they revisit (under
  // ASan a node still in its first pass may not come to a revisit of the
  // shards it took before they are handed back). ~25 s in Release; a
  // CI's ASan run on a slow day passed 120 s (the first REQUIRE
  // failed at 121 s), so 300.
  for (const std::string& n : kNodes) REQUIRE(WaitForRevisits(c.dir + "/" + n, 300));
  // A leave: its last checkpoint committed, the others take over.
  ::kill(c.nodes[1], SIGTERM);
  {
    int code = WaitExitFor(c.nodes[1], 120);
    INFO(NodeOutput(c.dir, "n2"));
    REQUIRE(code == 0);
  }
  const uint64_t left_us = MonotonicUs();  // from now on, only takers fetch
  const std::vector<testing::WarcRecord> left = testing::WarcRecords(c.dir + "/n2");
  std::set<std::string> n2_ids;
  std::map<std::string, std::string> n2_urls;  // URL -> its last capture's ETag
  for (const testing::WarcRecord& r : left) {
    if (r.type != "response" || r.status != "200") continue;
    n2_ids.insert(r.id);
    // Pages (robots.txt follows fetch.robots_cache_s, not the history).
    if (!r.uri.ends_with("/robots.txt")) n2_urls[r.uri] = r.etag;
  }
  REQUIRE(n2_urls.size() > 20);
  SecondsUntilTaken(c, "recrawl", "n2", 60);
  // The takers revisit n2's pages: each is due within recrawl.max_interval_s
  // (6 s) of n2's last fetch, and then waits for its host's politeness,
  // behind the host's other revisits (a fixed 6 s, under ASan, left one of
  // 680 pages unasked). A page never asked for fails here.
  {
    const std::vector<std::string> unasked =
        NotRequestedSince(c.site, n2_urls, left_us, 90);
    INFO(unasked.size() << " of n2's pages not asked for by a taker in 90 s; first: "
                        << (unasked.empty() ? "" : unasked[0]));
    CHECK(unasked.empty());
  }
  // Resumed: the placement gives n2 its shards back, handed over by the
  // takers with the history they kept meanwhile.
  c.nodes[1] = Spawn(std::string(CRAWLER_BINARY) + " crawl --resume " + c.dir +
                         "/n2 --set crawl.max_duration_s=8",
                     c.dir + "/n2.resumed.out");
  {
    int code = WaitExitFor(c.nodes[1], 120);
    INFO(NodeOutput(c.dir, "n2.resumed"));
    CHECK(code == 0);
  }
  // A continuous crawl runs until stopped: Ctrl-C.
  ::kill(c.nodes[0], SIGINT);
  ::kill(c.nodes[2], SIGINT);
  WaitOthers(c);
  c.site.Stop();

  std::map<std::string, std::vector<Capture>> by_url;
  std::vector<testing::WarcRecord> all;
  for (const std::string& n : kNodes) {
    std::vector<testing::WarcRecord> mine = testing::WarcRecords(c.dir + "/" + n);
    AddRecords(n, mine, &by_url);
    all.insert(all.end(), mine.begin(), mine.end());
  }
  // Every revisit refers to a full capture, on whichever node made it.
  CHECK(testing::RevisitProblem(all) == "");
  size_t revisited = 0, referring_to_n2 = 0;
  std::string recaptured;  // two full captures of one version in a row
  std::vector<std::string> not_revisited;
  for (auto& [url, caps] : by_url) {
    std::sort(caps.begin(), caps.end(),
              [](const Capture& a, const Capture& b) { return a.date < b.date; });
    std::string etag;
    for (const Capture& k : caps) {
      if (k.type == "response" && !etag.empty() && k.etag == etag && recaptured.empty())
        recaptured = url + " " + etag + " again by " + k.node;
      if (k.type == "response") etag = k.etag;
    }
    if (!n2_urls.contains(url)) continue;
    // n2's pages after it left: revisited by a taker, as revisits of n2's
    // captures (a 304 or the same digest) or as new captures (changed).
    bool by_taker = false;
    for (const testing::WarcRecord& r : all)
      if (r.uri == url && r.type == "revisit" && n2_ids.contains(r.refers_to)) {
        by_taker = true;
        referring_to_n2 += 1;
      }
    for (const Capture& k : caps) by_taker |= k.node != "n2" && k.date > caps[0].date;
    revisited += by_taker;
    if (!by_taker) not_revisited.push_back(url);
  }
  INFO("recaptured unchanged: " << recaptured);
  CHECK(recaptured.empty());
  WARN(n2_urls.size() << " URLs n2 captured before it left; " << revisited
                      << " revisited by the takers; " << referring_to_n2
                      << " revisit records elsewhere refer to n2's captures"
                      << (not_revisited.empty() ? "" : "; not: " + not_revisited[0]));
  INFO("not revisited by a taker, first: " << (not_revisited.empty() ? ""
                                                                     : not_revisited[0]));
  CHECK(revisited == n2_urls.size());
  CHECK(referring_to_n2 > 0);
  CHECK(LoadedHistoryFrom(
            ReadText(c.dir + "/n1/crawler.log") + ReadText(c.dir + "/n3/crawler.log"),
            "n2") > 0);
  // A continuous crawl is never idle: the job was never declared done
  // (its acknowledgements would be the job end's, of the last checkpoint).
  CHECK_THAT(c.Logs(), !Catch::Contains("is done (every node idle"));
  // n2, resumed, took shards back from n1 or n3, with their history.
  const std::string n2_log = ReadText(c.dir + "/n2/crawler.log");
  CHECK(LoadedHistoryFrom(n2_log, "n1") + LoadedHistoryFrom(n2_log, "n3") > 0);
}

}  // namespace
}  // namespace crawler::engine
