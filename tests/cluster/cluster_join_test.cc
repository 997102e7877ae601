// A node joining a running crawl with cluster.shared_dir: the shards the
// placement gives it are handed over; the newcomer or a giver killed -9 or
// damaged at the worst moments (its first checkpoint holding shards, a
// handoff under way), resumed or not. The oracle holds for the union of the
// nodes' fetch logs.
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
#include "cluster/redis/redis.h"
#include "cluster_fixture.h"
#include "crawler/checkpoint.h"
#include "takeover_helpers.h"

namespace crawler::cluster {
namespace {

using namespace engine::cluster_fixture;  // NOLINT: the shared fixture

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
    std::string all = c.redis.Cli("HVALS crawler:{" + job + "}:source");
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
  auto cur = checkpoint::ReadManifest(out + "/" + checkpoint::kCheckpointDir);
  auto prev = checkpoint::ReadManifest(out + "/" + checkpoint::kCheckpointPrevDir);
  REQUIRE(cur.ok());
  REQUIRE(prev.ok());
  REQUIRE(cur->at("sequence").to_number<uint64_t>() == first);  // not cut on since
  // Redis keeps where each of its shards came from, and the givers their
  // handoff checkpoints while it names them.
  std::string from = c.redis.Cli("HVALS crawler:{" + job + "}:source_prev");
  INFO("source_prev: " << from);
  CHECK(from.find("n4 ") == std::string::npos);
  CHECK(!from.empty());
  ::kill(n4, SIGKILL);
  ::waitpid(n4, nullptr, 0);
  std::ofstream(out + "/" + checkpoint::kCheckpointDir + "/MANIFEST.json",
                std::ios::trunc)
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
  testing::Reaper reap_n4(n4);
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
    "Cluster join: a fourth node joins a running crawl; the shards the placement "
    "gives it are handed over (drained, checkpointed, given up, taken over); no URL is "
    "requested twice, no host by two nodes at once; the truth set, once",
    "[cluster][takeover][join]") {
  // A long lease: the shards move by handoff, not by expiry. A politeness
  // delay long enough that the crawl is still running when n4 has its share.
  // No work-aware placement: n4, idle as it joins, would be given more than
  // the placement's share (cluster_balance_test.cc tests that). A robots.txt
  // that answers 500 (every fourth host) is fetched again 6-18 s later, long
  // after n4 joined (its shards are handed over ~1-3 s into the crawl).
  const std::string extra = std::string(kTakeover) +
                            " --set cluster.lease_s=30 --set frontier.min_delay_s=0.3"
                            " --set cluster.balance=false --set fetch.retry_base_s=12"
                            " --set fetch.max_retries=1";
  ClusterCrawl c("cluster_join", "join", extra,
                 std::max(1000u, EnvOr("CRAWLER_CLUSTER_PAGES", 2000)));
  WaitForCommit(c, "join", "n1");
  // The shards n4 should end with: the placement over all four, by the
  // job's seed hosts per shard (shard_owners.h).
  const std::vector<std::string> four = {"n1", "n2", "n3", "n4"};
  std::string weights = c.redis.Cli("HGET crawler:{join}:meta weights");
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
  testing::Reaper reap_n4(n4);
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
  // A robots.txt retry waiting out its back-off went with its shard (to n4,
  // or between the others: the placement over four moves some shards among
  // them too): the drain did not wait for it, its new owner fetched it
  // again from the handoff checkpoint, and every robots.txt has one final
  // line over all four logs (the giver's lines of a moved one: its failed
  // first attempt only).
  std::map<std::string, std::map<std::string, std::vector<testing::LogLine>>> robots;
  for (const std::string& n : four)
    for (const testing::LogLine& l :
         testing::ReadFetchLog(c.dir + "/" + n + "/fetch-log.jsonl"))
      if (l.robots_txt) robots[l.url][n].push_back(l);
  size_t moved = 0;
  for (const auto& [url, by_node] : robots) {
    INFO(url);
    size_t finals = 0;
    for (const auto& [n, lines] : by_node)
      for (const testing::LogLine& l : lines) finals += l.final;
    CHECK(finals == 1);
    moved += by_node.size() > 1;
  }
  WARN(moved << " robots.txt retries went with their shards");
  CHECK(moved > 0);
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
  testing::Reaper reap_n4(n4);
  // n2 starts handing shards to n4: n4 is frozen before it can take them,
  // and stays alive in Redis's eyes.
  REQUIRE(WaitForLog(c, "n2", "over to node n4: draining", 60));
  ::kill(n4, SIGSTOP);
  const std::string alive = "crawler:{handback}:alive:n4";
  REQUIRE(c.redis.Cli("PEXPIRE " + alive + " 600000").find('1') != std::string::npos);
  // n2 gives the first of them up (checkpoint kept in handoff/SEQ/, its
  // queue dropped here), commits one more checkpoint (which does not hold
  // them), and dies too, before n4's death is seen and the shards come
  // back to it.
  REQUIRE(WaitForLog(c, "n2", "leases given up", 120));
  ::kill(n4, SIGKILL);
  ::waitpid(n4, nullptr, 0);
  auto commit = [&] {
    std::string seq = c.redis.Cli("HGET crawler:{handback}:commits n2");
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
  c.redis.Cli("DEL " + alive);
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
  testing::Reaper reap_n4(n4);
  // n2 comes back once n4 is in the job, before its own leases expire.
  auto until = killed + std::chrono::seconds(10);
  while (c.redis.Cli("HGET crawler:{rejoin}:commits n4").size() < 2 &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  c.nodes[1] = Spawn(std::string(CRAWLER_BINARY) + " crawl --resume " + c.dir + "/n2",
                     c.dir + "/n2.resumed.out");
  double away = Seconds(std::chrono::steady_clock::now() - killed).count();
  REQUIRE(away < 15);  // else n2's leases expired: not the case under test
  REQUIRE(WaitForLog(c, "n2", "resumed from", 120));
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

}  // namespace
}  // namespace crawler::cluster
