// Death, leave, partitions and zombies with cluster.shared_dir
// (crawler/src/cluster/cluster.h): three nodes of the real binary, a real
// redis-server, crawler-testsite; one node is killed with -9 (not
// restarted), leaves on SIGTERM, is cut off from Redis, or is paused past its
// lease while the others take its shards over. The oracle holds for the
// union of the nodes' fetch logs, a dead node's cut to its last committed
// checkpoint (what the takers started from).
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
  // The takeover time, printed (Catch2's WARN; the lease is 3 s): taken
  // over before the wait's deadline, 120 s.
  WARN("n2's " << had << " shards taken over " << took << " s after its kill -9 (lease_s "
               << kLease << ")");
  REQUIRE(ShardsHeldBy(c, "death", "n2") == 0);
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
// before, holding fetches (not between a publish and its commit; stopped
// with its checkpoint writer ended, testing::StopStill). Its committed
// sequence and the fetch log bytes of the one before; {0, 0} if no such
// moment came in 100 tries.
std::pair<uint64_t, uint64_t> StopWhenCommittedIsNewest(const RedisServer& redis,
                                                        const std::string& job,
                                                        const std::string& node,
                                                        const std::string& out,
                                                        pid_t pid) {
  for (int i = 0; i < 100; ++i) {
    if (!testing::StopStill(pid, 60)) {  // a writer still running after 60 s
      ::kill(pid, SIGCONT);
      continue;
    }
    auto cur = checkpoint::ReadManifest(out + "/" + checkpoint::kCheckpointDir);
    auto prev = checkpoint::ReadManifest(out + "/" + checkpoint::kCheckpointPrevDir);
    std::string seq = redis.Cli("HGET crawler:{" + job + "}:commits " + node);
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

TEST_CASE(
    "Cluster leave: SIGTERM to one of three: it commits its last checkpoint, gives its "
    "leases up and exits 0; the others take over at once; the truth set, once",
    "[cluster][takeover]") {
  // A long lease (30 s): a lease of n2's still in Redis once it exited was
  // not given up, it would only lapse.
  ClusterCrawl c("cluster_leave", "leave",
                 std::string(kTakeover) + " --set cluster.lease_s=30");
  WaitForCommit(c, "leave", "n2");
  REQUIRE(ShardsHeldBy(c, "leave", "n2") > 0);
  ::kill(c.nodes[1], SIGTERM);
  int code = WaitExitFor(c.nodes[1], 120);
  INFO(NodeOutput(c.dir, "n2"));
  CHECK(code == 0);
  // Given up, not lapsed: no lease key holds n2's token any more (each is
  // deleted, or already taken by another node, which needs it deleted).
  const std::string leases = c.redis.Cli(
      "--raw EVAL \"local out = {} for _, k in ipairs(redis.call('keys', ARGV[1])) do "
      "out[#out + 1] = redis.call('get', k) end return out\" 0 "
      "'crawler:{leave}:lease:*'");
  INFO("leases after n2 exited:\n" << leases);
  CHECK(leases.find("n2 ") == std::string::npos);
  double took = SecondsUntilTaken(c, "leave", "n2", 120);
  WARN("n2's shards taken over " << took << " s after it exited");
  CHECK(ShardsHeldBy(c, "leave", "n2") == 0);
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
  // The takers fetch its hosts: n1 and n3 fetch 5 more pages of the hosts
  // n2 fetched (up to 60 s).
  std::set<std::string> n2_hosts;
  for (const std::string& u : AttemptedUrls(c.dir + "/n2/fetch-log.jsonl"))
    n2_hosts.insert(std::string(frontier::HostKey(u)));
  auto of_n2 = [&] {
    size_t n = 0;
    for (const char* taker : {"n1", "n3"})
      for (const std::string& u : AttemptedUrls(c.dir + "/" + taker + "/fetch-log.jsonl"))
        n += n2_hosts.count(std::string(frontier::HostKey(u)));
    return n;
  };
  const size_t at_takeover = of_n2();
  REQUIRE(testing::WaitFor([&] { return of_n2() >= at_takeover + 5; }, 60));
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
  // Leases of 6 s: the Redis restart below must not outlast n1's and n3's
  // (with 3 s, a restart that took 3 s under CI's load let n1 take n3's
  // shards, and n3 was fenced).
  ClusterCrawl c(
      "cluster_zombie_taken", "ztaken",
      std::string(kTakeover) + " --set cluster.lease_s=6" + kLongTimeouts + kNoGives);
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
  std::string committed = c.redis.Cli("HGET crawler:{ztaken}:commits n2");
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
  // Redis comes back as soon as n2 says it waits for it (not after a fixed
  // second): the others' leases run out only if it is down longer than them.
  c.redis.Kill();
  c.nodes[1] = Spawn(std::string(CRAWLER_BINARY) + " crawl --resume " + c.dir + "/n2",
                     c.dir + "/n2.out");
  REQUIRE(testing::WaitFor(
      [&] {
        return ReadText(c.dir + "/n2/crawler.log").find("trying again for up to 60 s") !=
               std::string::npos;
      },
      60));
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

}  // namespace
}  // namespace crawler::cluster
