// Faults of a cluster crawl's Redis, each with the real binary and a real
// redis-server: a consumer that read entries and vanished; a Redis that
// cannot persist (MISCONF); a planned failover to a replica and back
// (READONLY).
#include <xxhash.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "cluster/redis/cluster_wire.h"
#include "cluster/redis/redis.h"
#include "cluster_fixture.h"
#include "crawl_output.h"
#include "frontier/frontier.h"
#include "run_command.h"

namespace crawler::cluster {
namespace {

using namespace engine::cluster_fixture;  // NOLINT: the shared fixture

// Entries in, and pending of, every stream of `job`: "LEN PENDING".
std::string StreamsLeft(const RedisServer& redis, const std::string& job) {
  CommandResult r = RunCommand(
      redis.CliPrefix() +
      "EVAL \"local n, p = 0, 0 for _, k in ipairs(redis.call('keys', ARGV[1])) do "
      "n = n + redis.call('xlen', k) p = p + redis.call('xpending', k, 'owners')[1] end "
      "return n .. ' ' .. p\" 0 'crawler:{" +
      job + "}:s:*'");
  return r.output;
}

TEST_CASE(
    "Cluster: entries left pending for a consumer that is gone are reclaimed by the "
    "shard's holder after lease_s: applied, acknowledged, trimmed; the truth set, once",
    "[cluster]") {
  // 400 pages, each answered 40 ms late: the crawl outlasts the orphans'
  // lease_s (2 s) by several reclaim rounds, under ASan too.
  ClusterCrawl c("cluster_reclaim", "reclaim",
                 "--set cluster.lease_s=2 --set checkpoint.interval_s=0.5", 400, "",
                 "--delay-ms 40");
  REQUIRE(testing::WaitFor(
      [&] { return !AttemptedUrls(c.dir + "/n1/fetch-log.jsonl").empty(); }, 60));
  // A consumer "ghost" (a node that read and died, or whose late read came
  // after its shard was taken) takes the oldest unread entry of each of the
  // 64 streams and never acknowledges it: a node's batch, whose URLs must
  // not be lost, or ours, added to the stream of the first seed's shard,
  // holding that seed (its owner's filter drops the copy). Counted as a send
  // and a delivery, as the nodes' scripts do (the end test waits for sent ==
  // delivered). One script: no owner reads in between.
  auto address = ParseRedisUrl(c.redis.Url());
  REQUIRE(address.ok());
  auto redis = Redis::Connect(*address, 5);
  REQUIRE(redis.ok());
  const std::string seed =
      ReadText(c.dir + "/seeds.txt").substr(0, ReadText(c.dir + "/seeds.txt").find('\n'));
  const std::string line = seed + "\t0\t0\t\n";
  auto job_seed = (*redis)->Command({"HGET", "crawler:{reclaim}:meta", "seed"});
  REQUIRE(job_seed.ok());
  const std::string_view host = frontier::HostKey(seed);
  const uint64_t shard =
      XXH3_64bits_withSeed(host.data(), host.size(), std::stoull(job_seed->Str())) % 64;
  auto r = (*redis)->Command(
      {"EVAL",
       "for i = 0, 63 do local k = ARGV[1] .. 's:' .. i "
       "if i == tonumber(ARGV[4]) then "
       "redis.call('xadd', k, '*', 'z', ARGV[2], 'n', '1', 'b', ARGV[3], 'from', "
       "'ghost') "
       "redis.call('incr', ARGV[1] .. 'sent') end "
       "local r = redis.call('xreadgroup', 'GROUP', 'owners', 'ghost', 'COUNT', '1', "
       "'STREAMS', k, '>') "
       "if r then redis.call('incrby', ARGV[1] .. 'delivered', #r[1][2]) end end return "
       "1",
       "0", "crawler:{reclaim}:", cluster_wire::Compress(line),
       std::to_string(line.size()), std::to_string(shard)});
  REQUIRE(r.ok());
  INFO(r->Str());
  REQUIRE(r->Int() == 1);
  c.Finish();  // nothing the ghost took is lost
  CHECK_THAT(c.Logs(), Catch::Contains("reclaimed"));
  // Every entry applied, acknowledged after a checkpoint and trimmed: none
  // is left pending for the ghost, holding the trim back.
  CHECK(StreamsLeft(c.redis, "reclaim") == "0 0\n");
}

// The nodes were refused (`errorstat`: INFO's errorstat_KIND line), but
// backed off: fewer than 1,000 refusals (a retry loop without back-off makes
// hundreds of thousands).
void CheckRefusals(const std::string& kind, const std::string& errorstat,
                   const std::string& by_command) {
  INFO(kind << " replies: " << errorstat << "\n" << by_command);
  const size_t at = errorstat.find("count=");
  REQUIRE(at != std::string::npos);
  const long count = std::atol(errorstat.c_str() + at + 6);
  CHECK(count > 0);
  CHECK(count < 1000);
}

TEST_CASE(
    "Cluster: Redis unable to persist (MISCONF) for 4 s mid-crawl: the nodes hold, say "
    "why, back off (no hot retry loop) and finish once it persists again; the truth set, "
    "once",
    "[cluster][fault]") {
  // `dir` is a protected config: the test moves Redis's RDB to /proc, where
  // no snapshot can be written, and back.
  ClusterCrawl c("cluster_misconf", "misconf", "--set frontier.min_delay_s=0.05",
                 std::max(1000u, EnvOr("CRAWLER_CLUSTER_PAGES", 2000)),
                 "--enable-protected-configs yes", "--delay-ms 20");
  const std::string cli = c.redis.CliPrefix();
  REQUIRE(testing::WaitFor(
      [&] { return AttemptedUrls(c.dir + "/n1/fetch-log.jsonl").size() >= 50; }, 60));
  std::string redis_dir = RunCommand(cli + "--raw CONFIG GET dir").output;
  redis_dir = redis_dir.substr(redis_dir.find('\n') + 1);
  redis_dir = redis_dir.substr(0, redis_dir.find('\n'));
  REQUIRE(!redis_dir.empty());
  // A failed snapshot with a save point set: Redis refuses every write.
  REQUIRE(RunCommand(cli + "CONFIG SET save '3600 1'").output == "OK\n");
  REQUIRE(RunCommand(cli + "CONFIG SET dir /proc").output == "OK\n");
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (c.redis.Info("rdb_last_bgsave_status") != "err" &&
         std::chrono::steady_clock::now() < until) {
    RunCommand(cli + "BGSAVE");  // refused while another is running: tried again
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(c.redis.Info("rdb_last_bgsave_status") == "err");
  std::this_thread::sleep_for(std::chrono::seconds(4));
  const std::string refused = c.redis.Info("errorstat_MISCONF");
  const std::string by_command = RunCommand(cli + "INFO commandstats").output;
  REQUIRE(RunCommand(cli + "CONFIG SET dir " + redis_dir).output == "OK\n");
  until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (c.redis.Info("rdb_last_bgsave_status") != "ok" &&
         std::chrono::steady_clock::now() < until) {
    RunCommand(cli + "BGSAVE");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(c.redis.Info("rdb_last_bgsave_status") == "ok");
  c.Finish();
  CHECK_THAT(c.Logs(), Catch::Contains("unable to persist to disk (MISCONF)"));
  // Three nodes refused for 4 s, with back-off and one batch as a probe at
  // each retry: 81 refusals measured. Every held batch sent at each retry
  // made 2,857-3,415; a retry loop without back-off, hundreds of thousands.
  CheckRefusals("MISCONF", refused, by_command);
}

// Waits up to 30 s for INFO field `name` of `redis` to read `value`.
bool AwaitInfo(const RedisServer& redis, const std::string& name,
               const std::string& value) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (redis.Info(name) != value && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return redis.Info(name) == value;
}

TEST_CASE(
    "Cluster: a planned Redis failover to a replica and back (FAILOVER) mid-crawl: the "
    "nodes hold on READONLY, say why, back off and finish; the truth set, once",
    "[cluster][fault]") {
  // The nodes know one address (no Sentinel): while their Redis is the
  // replica, every write is refused (READONLY) and blocked reads are
  // unblocked; they hold, as for MISCONF, until it is the primary again.
  ClusterCrawl c("cluster_failover", "failover", "--set frontier.min_delay_s=0.05",
                 std::max(1000u, EnvOr("CRAWLER_CLUSTER_PAGES", 2000)), "",
                 "--delay-ms 20");
  RedisServer replica(c.dir + "/replica");
  const std::string cli = c.redis.CliPrefix(), cli_replica = replica.CliPrefix();
  REQUIRE(
      RunCommand(cli_replica + "REPLICAOF 127.0.0.1 " + std::to_string(c.redis.port()))
          .output == "OK\n");
  REQUIRE(AwaitInfo(replica, "master_link_status", "up"));
  REQUIRE(testing::WaitFor(
      [&] { return AttemptedUrls(c.dir + "/n1/fetch-log.jsonl").size() >= 50; }, 60));
  // FAILOVER pauses writes until the replica has every one, then swaps the
  // roles: nothing acknowledged is lost (an unplanned failover can lose the
  // last writes; docs/cluster.md).
  REQUIRE(RunCommand(cli + "FAILOVER TIMEOUT 20000").output == "OK\n");
  REQUIRE(AwaitInfo(c.redis, "role", "slave"));
  REQUIRE(AwaitInfo(replica, "role", "master"));
  std::this_thread::sleep_for(std::chrono::seconds(4));
  const std::string refused = c.redis.Info("errorstat_READONLY");
  const std::string by_command = RunCommand(cli + "INFO commandstats").output;
  REQUIRE(RunCommand(cli_replica + "FAILOVER TIMEOUT 20000").output == "OK\n");
  REQUIRE(AwaitInfo(c.redis, "role", "master"));
  c.Finish();
  CHECK_THAT(c.Logs(), Catch::Contains("a read-only replica (READONLY)"));
  CheckRefusals("READONLY", refused, by_command);
}

}  // namespace
}  // namespace crawler::cluster
