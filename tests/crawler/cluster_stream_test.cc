// The streams of a cluster crawl (the real binary, a real redis-server):
// what Redis keeps of a job once it is over.
#include <xxhash.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "cluster/cluster_wire.h"
#include "cluster/redis.h"
#include "cluster_fixture.h"
#include "crawl_output.h"
#include "frontier/frontier.h"
#include "run_command.h"

namespace crawler::engine {
namespace {

using namespace cluster_fixture;  // NOLINT: the shared fixture

// Entries in, and pending of, every stream of `job`: "LEN PENDING".
std::string StreamsLeft(const RedisServer& redis, const std::string& job) {
  CommandResult r = RunCommand(
      "redis-cli -p " + std::to_string(redis.port()) +
      " EVAL \"local n, p = 0, 0 for _, k in ipairs(redis.call('keys', ARGV[1])) do "
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
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (AttemptedUrls(c.dir + "/n1/fetch-log.jsonl").empty() &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
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

}  // namespace
}  // namespace crawler::engine
