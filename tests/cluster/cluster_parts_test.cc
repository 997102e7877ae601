// The cluster's pure parts: the Redis URL, shard ownership by rendezvous
// hashing, the doorbell that says when to read, which shards a busy node gives. (The
// exchange itself is tested against a real redis-server in cluster_test.cc.)
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "base/secret.h"
#include "cluster/cluster.h"
#include "cluster/exchange/doorbell.h"
#include "cluster/exchange/receiver.h"
#include "cluster/handoff/balancer.h"
#include "cluster/membership/balance.h"
#include "cluster/membership/cluster_job.h"
#include "cluster/membership/heartbeats.h"
#include "cluster/redis/cluster_wire.h"
#include "cluster/redis/redis.h"
#include "crawl_output.h"

namespace crawler::cluster {
namespace {

TEST_CASE(
    "ParseRedisUrl: host and port; the password from the environment only; errors name "
    "the URL without its password",
    "[engine][cluster]") {
  ::unsetenv(kRedisPasswordEnv);
  auto a = ParseRedisUrl("redis://10.0.0.5:6390");
  REQUIRE(a.ok());
  CHECK(a->host == "10.0.0.5");
  CHECK(a->port == 6390);
  CHECK(a->password.empty());
  ::setenv(kRedisPasswordEnv, "s3cret", 1);
  auto b = ParseRedisUrl("redis://redis.example:7000/");
  ::unsetenv(kRedisPasswordEnv);
  REQUIRE(b.ok());
  CHECK(b->host == "redis.example");
  CHECK(b->port == 7000);
  CHECK(b->password == "s3cret");
  CHECK(b->Text() == "redis.example:7000");
  // A password in the URL is refused, and the message does not repeat it.
  auto inline_pw = ParseRedisUrl("redis://:hunter2@redis.example:7000/");
  REQUIRE_FALSE(inline_pw.ok());
  CHECK_THAT(inline_pw.status().message(), Catch::Contains(kRedisPasswordEnv));
  CHECK_THAT(inline_pw.status().message(), Catch::Contains("redis://***@redis.example"));
  CHECK_THAT(inline_pw.status().message(), !Catch::Contains("hunter2"));
  auto c = ParseRedisUrl("redis://localhost");
  REQUIRE(c.ok());
  CHECK(c->port == 6379);
  for (const char* bad :
       {"http://x:1", "redis://", "redis://h:0", "redis://h:99999", "redis://h:12x"}) {
    auto r = ParseRedisUrl(bad);
    INFO(bad);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains(bad));
  }
}

TEST_CASE("RefusalOf: full, a replica, cannot persist; other errors are not refusals",
          "[engine][cluster]") {
  // As redis-server 7.0 answers a script whose XADD meets maxmemory.
  CHECK_THAT(RefusalOf("OOM command not allowed when used memory > 'maxmemory'. script: "
                       "67f67f39, on @user_script:1."),
             Catch::Contains("full"));
  CHECK_THAT(RefusalOf("READONLY You can't write against a read only replica."),
             Catch::Contains("primary"));
  CHECK_THAT(RefusalOf("MISCONF Redis is configured to save RDB snapshots, but it's "
                       "currently unable to persist to disk."),
             Catch::Contains("persist"));
  for (const char* other : {"ERR wrong number of arguments", "NOGROUP No such key",
                            "WRONGTYPE Operation against a key", "NOSCRIPT", ""})
    CHECK(RefusalOf(other).empty());
}

TEST_CASE(
    "Job identity: none without the file, written once and read back; a damaged one is "
    "an error naming it",
    "[engine][cluster]") {
  const std::string dir = testing::TempDir("job_identity");
  auto none = ReadJobIdentity(dir);
  REQUIRE(none.ok());
  CHECK(none->incarnation.empty());
  REQUIRE(WriteJobIdentity(dir, {"j1", "c2a494d7-e454", 9271018891816393409ull}).ok());
  auto back = ReadJobIdentity(dir);
  REQUIRE(back.ok());
  CHECK(back->job == "j1");
  CHECK(back->incarnation == "c2a494d7-e454");
  CHECK(back->seed == 9271018891816393409ull);
  std::ofstream(dir + "/cluster-job.json") << "{\"job\": \"j1\"";
  auto bad = ReadJobIdentity(dir);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains(dir + "/cluster-job.json"));
  RedisAddress at;
  at.host = "10.0.0.5";
  at.port = 6390;
  at.password = "pw";
  Status lost = JobLost("missing", "", *back, at);
  CHECK(lost.code() == Status::Code::kInvalidArgument);
  CHECK_THAT(lost.message(), Catch::Contains("is not in Redis at 10.0.0.5:6390"));
  CHECK_THAT(lost.message(), !Catch::Contains("pw"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("WithoutUserinfo: every URL's user and password become ***", "[base]") {
  CHECK(WithoutUserinfo("--set cluster.redis=redis://:pw@h:1") ==
        "--set cluster.redis=redis://***@h:1");
  CHECK(WithoutUserinfo("a http://u:p@x/y@z and redis://h:2 and s://q@r") ==
        "a http://***@x/y@z and redis://h:2 and s://***@r");
  CHECK(WithoutUserinfo("no url @ all") == "no url @ all");
  CHECK(WithoutUserinfo("redis://") == "redis://");
}

TEST_CASE("ParseLines: the wire's URL lines, a sitemap marked by a fifth field",
          "[cluster]") {
  using cluster_wire::ParseLines;
  std::vector<frontier::UrlEntry> got;
  REQUIRE(
      ParseLines("http://a/1\t2\t0\thttp://a/\n"
                 "http://a/s.xml\t0\t1\thttp://a/robots.txt\ts\n",
                 &got));
  REQUIRE(got.size() == 2);
  CHECK(got[0].url == "http://a/1");
  CHECK(got[0].depth == 2);
  CHECK(got[0].referrer == "http://a/");
  CHECK(got[0].kind == frontier::UrlEntry::Kind::kPage);
  CHECK(got[1].redirects == 1);
  CHECK(got[1].referrer == "http://a/robots.txt");
  CHECK(got[1].kind == frontier::UrlEntry::Kind::kSitemap);
  // Anything else in a fifth field, or a missing newline, is malformed.
  CHECK_FALSE(ParseLines("http://a/1\t0\t0\tr\tx\n", &got));
  CHECK_FALSE(ParseLines("http://a/1\t0\t0\tr", &got));
  CHECK(got.size() == 2);  // nothing added by a malformed batch
}

TEST_CASE("ShardOwner: balanced, and a new node takes shards only for itself",
          "[engine][cluster]") {
  const uint32_t shards = 4096;
  std::vector<std::string> three = {"n1", "n2", "n3"};
  std::vector<std::string> four = {"n1", "n2", "n3", "n4"};
  std::map<uint32_t, uint32_t> count;
  uint32_t moved = 0, moved_elsewhere = 0;
  for (uint32_t s = 0; s < shards; ++s) {
    uint32_t before = ShardOwner(three, s), after = ShardOwner(four, s);
    ++count[before];
    if (before != after) {
      ++moved;
      if (four[after] != "n4") ++moved_elsewhere;
    }
    CHECK(ShardOwner(three, s) == before);  // deterministic
  }
  for (const auto& [node, n] : count) {
    INFO(three[node] << " owns " << n);
    CHECK(n > shards / 3 * 8 / 10);  // within 20% of a fair share
    CHECK(n < shards / 3 * 12 / 10);
  }
  CHECK(moved_elsewhere == 0);         // only to the new node ...
  CHECK(moved > shards / 4 * 8 / 10);  // ... about a quarter of them
  CHECK(moved < shards / 4 * 12 / 10);
}

TEST_CASE(
    "Doorbell: reads first, while reads take entries, when the shards or epochs change, "
    "when the bell rang, and every full_every; an idle node looks less and less often",
    "[engine][cluster]") {
  using namespace std::chrono_literals;
  using Next = Doorbell::Next;
  Doorbell bell(50ms, 5s);
  const Doorbell::Shards mine = {{3, 1}, {7, 2}};
  auto t = Doorbell::Clock::now();
  CHECK(bell.Before(mine, t) == Next::kRead);  // the first round
  bell.Read("4", 10);
  CHECK(bell.Before(mine, t) == Next::kRead);  // it took entries: maybe more
  bell.Read("4", 0);
  CHECK(bell.Before(mine, t) == Next::kLook);
  CHECK_FALSE(bell.Looked("4", t));  // unchanged: wait 5 ms
  CHECK(bell.Before(mine, t + 1ms) == Next::kSkip);
  CHECK(bell.Before(mine, t + 5ms) == Next::kLook);
  // Idle: the looks spread out, 5, 10, 20, 40, then 50 ms (the cap).
  auto at = t + 5ms;
  for (auto wait : {10ms, 20ms, 40ms, 50ms, 50ms}) {
    CHECK_FALSE(bell.Looked("4", at));
    CHECK(bell.Before(mine, at + wait - 1ms) == Next::kSkip);
    CHECK(bell.Before(mine, at + wait) == Next::kLook);
    at += wait;
  }
  CHECK(bell.Looked("5", at));  // it rang: read now
  bell.Read("5", 1);
  bell.Read("5", 0);
  CHECK(bell.Before(mine, at) == Next::kLook);  // and the looks start over at 5 ms
  CHECK_FALSE(bell.Looked("5", at));
  CHECK(bell.Before(mine, at + 5ms) == Next::kLook);
  // A new epoch (a lease taken again), or another shard: read.
  CHECK(bell.Before({{3, 1}, {7, 3}}, at + 5ms) == Next::kRead);
  bell.Read("5", 0);
  CHECK(bell.Before({{3, 1}, {7, 3}, {9, 1}}, at + 5ms) == Next::kRead);
  bell.Read("5", 0);
  const Doorbell::Shards now_mine = {{3, 1}, {7, 3}, {9, 1}};
  CHECK(bell.Before(now_mine, at + 5ms) == Next::kLook);
  CHECK_FALSE(bell.Looked("5", at + 5ms));
  // Every 5 s in any case; and after Force (a reconnect, a failed read).
  CHECK(bell.Before(now_mine, at + 5ms + 5s) == Next::kRead);
  bell.Read("5", 0);
  bell.Force();
  CHECK(bell.Before(now_mine, at + 5ms + 5s) == Next::kRead);
}

TEST_CASE(
    "ShardsToGive to an idle node: the heaviest shards up to half the backlog; none when "
    "the backlog is small, short at this node's rate, or its rate unknown; a shard over "
    "half stays",
    "[engine][cluster]") {
  const BalanceRule rule;  // 50 URLs, 2 s, a gap of 10%
  // 1,000 queued at 10 pages/s: 100 s of work. Half is 500: 400, then 300
  // would pass it, 100 fits, and nothing after it does.
  std::vector<ShardBacklog> b = {{1, 100}, {2, 400}, {3, 300},
                                 {4, 50},  {5, 50},  {6, 100}};
  CHECK(ShardsToGive(b, 10, 0, rule) == std::vector<uint32_t>{2, 1});
  // 850: half is 425; 300, then 250 and 150 would pass it, 100 fits.
  CHECK(ShardsToGive({{1, 300}, {2, 250}, {3, 150}, {4, 100}, {5, 50}}, 10, 0, rule) ==
        std::vector<uint32_t>{1, 4});
  // Ties by shard number: the same answer on every run.
  CHECK(ShardsToGive({{9, 300}, {4, 300}, {7, 300}, {8, 0}}, 10, 0, rule) ==
        std::vector<uint32_t>{4});
  // Not worth a handoff: under 50 URLs; under 2 s at this rate; rate unknown.
  CHECK(ShardsToGive({{1, 30}, {2, 19}}, 1, 0, rule).empty());
  CHECK(ShardsToGive(b, 600, 0, rule).empty());  // 1,000 URLs in 1.7 s
  CHECK(ShardsToGive(b, 300, 0, rule) == std::vector<uint32_t>{2, 1});  // in 3.3 s
  CHECK(ShardsToGive(b, 0, 0, rule).empty());
  // One shard holds nearly all: giving it would only move the problem, and
  // what fits beside it (20 URLs) is under half of min_queued.
  CHECK(ShardsToGive({{1, 5000}, {2, 10}, {3, 10}}, 10, 0, rule).empty());
  CHECK(ShardsToGive({{1, 5000}, {2, 15}, {3, 15}}, 10, 0, rule) ==
        std::vector<uint32_t>{2, 3});
  CHECK(ShardsToGive({{1, 5000}}, 10, 0, rule).empty());
  CHECK(ShardsToGive({}, 10, 0, rule).empty());
}

TEST_CASE(
    "ShardsToGive to a busy node: up to half the gap between the two loads, and only "
    "when the gap is at least 10% of the giver's and 50 URLs; MaxTakerLoad is the most "
    "the taker may have for the give to pay",
    "[engine][cluster]") {
  const BalanceRule rule;
  // 1,000 queued here at 10 pages/s, 400 there: the gap is 600, half 300:
  // 400 would pass it, 300 fits, then nothing else does.
  const std::vector<ShardBacklog> b = {{1, 100}, {2, 400}, {3, 300},
                                       {4, 50},  {5, 50},  {6, 100}};
  CHECK(ShardsToGive(b, 10, 400, rule) == std::vector<uint32_t>{3});
  // 700 there: a gap of 300 (30%), half 150: 100 fits, then 50.
  CHECK(ShardsToGive(b, 10, 700, rule) == std::vector<uint32_t>{1, 4});
  // 800 there: a gap of 200 (20%), half 100: the first 100 fits.
  CHECK(ShardsToGive(b, 10, 800, rule) == std::vector<uint32_t>{1});
  // 910 there: a gap of 90, 9% of this node's: not worth a handoff.
  CHECK(ShardsToGive(b, 10, 910, rule).empty());
  CHECK(ShardsToGive(b, 10, 1000, rule).empty());
  CHECK(ShardsToGive(b, 10, 5000, rule).empty());
  // A small backlog: a gap of 25% but under 50 URLs.
  CHECK(ShardsToGive({{1, 60}, {2, 60}, {3, 40}}, 1, 120, rule).empty());
  // The bound the give script checks: 1,000 - max(10%, 50 URLs); 100 - 50.
  CHECK(MaxTakerLoad(1000, rule) == 900);
  CHECK(MaxTakerLoad(100, rule) == 50);
  CHECK(MaxTakerLoad(40, rule) == 0);
  // Whatever ShardsToGive gives, the taker's load was at most that bound.
  for (uint64_t load = 0; load <= 1000; load += 10)
    if (!ShardsToGive(b, 10, load, rule).empty()) CHECK(load <= MaxTakerLoad(1000, rule));
}

TEST_CASE(
    "ShardsToGive: a pinned shard (a host's robots.txt being fetched) is never given, "
    "and its URLs still count in the backlog",
    "[engine][cluster]") {
  const BalanceRule rule;
  // As the first case above, with shard 2 (400) pinned: half of 1,000 is
  // 500, and 300, 100 and 100 fill it (without the pin: 400 and 100).
  const std::vector<ShardBacklog> b = {{1, 100}, {2, 400, true}, {3, 300},
                                       {4, 50},  {5, 50},        {6, 100}};
  CHECK(ShardsToGive(b, 10, 0, rule) == std::vector<uint32_t>{3, 1, 6});
  // Every shard pinned: nothing.
  CHECK(ShardsToGive({{1, 300, true}, {2, 200, true}}, 10, 0, rule).empty());
  // To a busy taker: 1,040 here (the pinned 150 with them), 740 there, a
  // gap of 300 (29%), half 150: shard 7
  // would fill it alone; pinned, 140 goes.
  CHECK(ShardsToGive({{7, 150, true}, {1, 600}, {4, 50}, {3, 100}, {5, 140}}, 10, 740,
                     rule) == std::vector<uint32_t>{5});
}

TEST_CASE(
    "Heartbeats: every heartbeat_s; 4x as often (50 ms at least) for two lease TTLs "
    "after "
    "a wanted shard that is not held appears, normal again once all are held",
    "[engine][cluster]") {
  using std::chrono::milliseconds;
  Heartbeats beats(2.0, std::chrono::seconds(6));
  const Heartbeats::Clock::time_point t0{std::chrono::hours(1)};
  CHECK(beats.Due(t0));  // the first
  CHECK_FALSE(beats.Due(t0 + milliseconds(2000)));
  CHECK(beats.Due(t0 + milliseconds(2001)));
  CHECK_FALSE(beats.taking());
  // A give: shards 4 and 9 wanted, not held. Every 0.5 s now.
  Heartbeats::Clock::time_point t = t0 + milliseconds(2001);
  beats.Unheld({4, 9}, t);
  CHECK(beats.taking());
  CHECK_FALSE(beats.Due(t + milliseconds(500)));
  CHECK(beats.Due(t + milliseconds(501)));
  // Still unheld 12 s later (two TTLs): back to every 2 s, until another
  // shard appears.
  beats.Unheld({4, 9}, t + milliseconds(6000));  // nothing new: no new window
  CHECK(beats.Due(t + milliseconds(12100)));
  CHECK_FALSE(beats.Due(t + milliseconds(12700)));
  beats.Unheld({4}, t + milliseconds(12700));  // one taken: nothing new either
  CHECK_FALSE(beats.Due(t + milliseconds(13000)));
  beats.Unheld({4, 11}, t + milliseconds(13000));  // a new one: eager again
  CHECK(beats.Due(t + milliseconds(13000)));
  CHECK_FALSE(beats.Due(t + milliseconds(13400)));
  CHECK(beats.Due(t + milliseconds(13600)));
  // All held: the normal period at once.
  beats.Unheld({}, t + milliseconds(13700));
  CHECK_FALSE(beats.taking());
  CHECK_FALSE(beats.Due(t + milliseconds(14200)));
  CHECK(beats.Due(t + milliseconds(15601)));
  // A short heartbeat_s: 4x as often, but not under 50 ms.
  Heartbeats fast(0.1, std::chrono::milliseconds(300));
  fast.Unheld({1}, t0);
  CHECK(fast.Due(t0));
  CHECK_FALSE(fast.Due(t0 + milliseconds(50)));
  CHECK(fast.Due(t0 + milliseconds(51)));
}

TEST_CASE(
    "Heartbeats: Soon (the placement seen to move) makes the next round's heartbeat due, "
    "50 ms after the last at the least, once",
    "[engine][cluster]") {
  using std::chrono::milliseconds;
  Heartbeats beats(2.0, std::chrono::seconds(6));
  const Heartbeats::Clock::time_point t0{std::chrono::hours(1)};
  CHECK(beats.Due(t0));
  CHECK_FALSE(beats.Due(t0 + milliseconds(30)));
  beats.Soon();
  CHECK_FALSE(beats.Due(t0 + milliseconds(50)));  // not more often than every 50 ms
  CHECK(beats.Due(t0 + milliseconds(51)));
  // Once: the period is back after it.
  CHECK_FALSE(beats.Due(t0 + milliseconds(200)));
  CHECK_FALSE(beats.Due(t0 + milliseconds(2051)));
  CHECK(beats.Due(t0 + milliseconds(2052)));
}

TEST_CASE(
    "RecentRate: the last minute's rate until 5 s have passed, then the rate over the "
    "last 5 s or more; a page count that went back starts anew",
    "[engine][cluster]") {
  using std::chrono::milliseconds;
  RecentRate r;
  const RecentRate::Clock::time_point t0{std::chrono::hours(1)};
  CHECK(r.At(t0, 1000, 20.0) == 20.0);  // nothing measured yet
  CHECK(r.At(t0 + milliseconds(4999), 1400, 21.0) == 21.0);
  // 5 s and 500 pages later: 100 pages/s, whatever the minute says.
  CHECK(r.At(t0 + milliseconds(5000), 1500, 21.0) == Approx(100.0));
  CHECK(r.At(t0 + milliseconds(7000), 1600, 90.0) ==
        Approx(100.0));  // kept until 5 s more
  // The rate fell (fast hosts given away): 10 pages over the next 8 s.
  CHECK(r.At(t0 + milliseconds(13000), 1510, 90.0) == Approx(1.25));
  // The count went back (a new process): measured anew from there.
  CHECK(r.At(t0 + milliseconds(14000), 5, 90.0) == Approx(1.25));
  CHECK(r.At(t0 + milliseconds(19000), 15, 90.0) == Approx(2.0));
  // No page at all in 5 s: the minute's rate stands in (0 is not a rate).
  CHECK(r.At(t0 + milliseconds(24000), 15, 3.0) == 3.0);
}

TEST_CASE(
    "Balancer: a node publishes no load before it knows whether it is idle, then 0 "
    "when idle",
    "[engine][cluster]") {
  namespace fs = std::filesystem;
  const std::string dir =
      fs::temp_directory_path() / ("balancer-load-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  engine::ClusterConfig cfg;
  cfg.job = "j";
  cfg.node = "n1";
  cfg.shared_dir = dir;  // takeover: balancing on
  Membership members(cfg.job, cfg.node, 2, /*takeover=*/true);
  Tenure tenure(cfg.node, cfg.shards, std::chrono::seconds(6), true);
  ShardStates states(cfg, 1, dir + "/n1");
  Receiver receiver(
      cfg, [](const std::string& k) { return "crawler:{j}:" + k; },
      [](const RedisReply&, const char*) { return false; });
  std::vector<std::atomic<bool>> ready(cfg.shards);
  Handoffs handoff(cfg.node, cfg.shards, dir + "/n1", ready.data(), receiver);
  Heartbeats beats(cfg.heartbeat_s, std::chrono::seconds(6));
  RedisLink redis(RedisAddress{}, nullptr);
  Balancer balancer(cfg, {members, tenure, states, handoff, beats, redis},
                    std::vector<uint32_t>(cfg.shards, 0), /*continuous=*/false);
  balancer.SetBacklogSource([](const crawl::NodeLife::HostVisitor& visit) {
    visit("http://a.example", 40, true);  // a shard this node does not hold
    return true;
  });
  // The first heartbeat can come before the first state: not a taker yet
  // (it published "0", idle, and drew a give of a busy node's share).
  CHECK(balancer.LoadToPublish(true) == "-");
  REQUIRE(members.StateCommand(/*idle=*/true));
  CHECK(balancer.LoadToPublish(true) == "0");
  CHECK(balancer.LoadToPublish(false) == "-");  // leaving or failed
  fs::remove_all(dir);
}

}  // namespace
}  // namespace crawler::cluster
