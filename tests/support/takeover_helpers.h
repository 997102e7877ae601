// What the takeover tests share (cluster_takeover_test.cc, cluster_join_test.cc,
// cluster_big_shard_test.cc, cluster_chaos_test.cc, cluster_recrawl_test.cc):
// a node's last committed checkpoint and how to wait for one, the shards a
// node holds in Redis, the oracle with a dead node, the flags of a crawl
// with cluster.shared_dir.
#ifndef CRAWLER_TESTS_TAKEOVER_HELPERS_H_
#define CRAWLER_TESTS_TAKEOVER_HELPERS_H_

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

namespace crawler::engine::cluster_fixture {

using Seconds = std::chrono::duration<double>;

// The manifest of NODE's last committed checkpoint (Redis: commits), or an
// empty object while it has none. DIR: the crawl's directory (DIR/NODE/).
inline boost::json::object Committed(const RedisServer& redis, const std::string& dir,
                                     const std::string& job, const std::string& node) {
  std::string seq = redis.Cli("HGET crawler:{" + job + "}:commits " + node);
  if (seq.empty() || seq == "\n") return {};
  uint64_t want = std::stoull(seq);
  for (const char* d : {checkpoint::kCheckpointDir, checkpoint::kCheckpointPrevDir}) {
    auto m = checkpoint::ReadManifest(dir + "/" + node + "/" + d);
    if (m.ok() && m->at("sequence").to_number<uint64_t>() == want) return *m;
  }
  return {};
}
inline boost::json::object Committed(const ClusterCrawl& c, const std::string& job,
                                     const std::string& node) {
  return Committed(c.redis, c.dir, job, node);
}

inline uint64_t CommittedLogBytes(const RedisServer& redis, const std::string& dir,
                                  const std::string& job, const std::string& node) {
  boost::json::object m = Committed(redis, dir, job, node);
  return m.empty() ? 0 : m.at("fetch_log").at("bytes").to_number<uint64_t>();
}

inline uint64_t CommittedLogBytes(const ClusterCrawl& c, const std::string& job,
                                  const std::string& node) {
  return CommittedLogBytes(c.redis, c.dir, job, node);
}

// Waits until NODE has committed a checkpoint with fetches in it.
inline void WaitForCommit(const RedisServer& redis, const std::string& dir,
                          const std::string& job, const std::string& node) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (CommittedLogBytes(redis, dir, job, node) == 0 &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(CommittedLogBytes(redis, dir, job, node) > 0);
}
inline void WaitForCommit(const ClusterCrawl& c, const std::string& job,
                          const std::string& node) {
  WaitForCommit(c.redis, c.dir, job, node);
}

// Shards whose last lease holder is NODE.
inline size_t ShardsHeldBy(const ClusterCrawl& c, const std::string& job,
                           const std::string& node) {
  std::string all = c.redis.Cli("HVALS crawler:{" + job + "}:holder");
  size_t n = 0;
  for (size_t at = 0; (at = all.find(node + " ", at)) != std::string::npos; ++at)
    n += at == 0 || all[at - 1] == '\n';
  return n;
}

// Seconds until no shard's last holder is NODE (at most `limit`).
inline double SecondsUntilTaken(const ClusterCrawl& c, const std::string& job,
                                const std::string& node, double limit) {
  auto start = std::chrono::steady_clock::now();
  while (ShardsHeldBy(c, job, node) > 0 &&
         Seconds(std::chrono::steady_clock::now() - start).count() < limit)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return Seconds(std::chrono::steady_clock::now() - start).count();
}

// Waits for n1 and n3 (each must exit 0).
inline void WaitOthers(ClusterCrawl& c) {
  for (size_t i : {0, 2}) {
    int code = WaitExitFor(c.nodes[i], 600);
    INFO(kNodes[i] << ": " << NodeOutput(c.dir, kNodes[i]));
    CHECK(code == 0);
  }
}

// The oracle with a node that died: its fetch log cut to its last committed
// checkpoint (what the takers started from), then the union of all.
inline void CheckUnionWithDead(const ClusterCrawl& c, const std::string& job,
                               const std::string& dead,
                               const std::vector<std::string>& nodes = kNodes) {
  // Its last commit's checkpoint is on disk (checkpoint/ or .prev/) if it
  // made one; it may hold no fetch yet (a node that joined and was killed
  // before it committed a page: the ASan chaos run did that), and then
  // nothing of its log counts (its takers started from the sources before).
  std::string seq = c.redis.Cli("HGET crawler:{" + job + "}:commits " + dead);
  boost::json::object m = Committed(c, job, dead);
  INFO(dead << "'s last commit: '" << seq << "'");
  if (!seq.empty() && seq != "\n") REQUIRE(!m.empty());
  uint64_t keep = m.empty() ? 0 : m.at("fetch_log").at("bytes").to_number<uint64_t>();
  const std::string out = c.dir + "/" + dead;
  if (m.empty()) {  // nothing committed: nothing of its log counts
    std::filesystem::resize_file(out + "/fetch-log.jsonl", 0);
  } else {
    // What a user runs on a dead node's directory (README): its fetch log,
    // WARC files and seen log cut back to that commit.
    testing::CommandResult cut =
        testing::RunCommand(std::string(CRAWLER_BINARY) + " cut-back " + out);
    INFO(cut.output);
    REQUIRE(cut.exit_code == 0);
    CHECK(std::filesystem::file_size(out + "/fetch-log.jsonl") == keep);
    CHECK(testing::WarcNotAsLogged(out).empty());  // its WARCs: the same pages
  }
  WARN(dead << "'s outputs cut back to its last commit: " << keep << " log bytes");
  // Killed before a commit that held a page, it took no part that counts.
  std::vector<std::string> counted;
  for (const std::string& n : nodes)
    if (n != dead || keep > 0) counted.push_back(n);
  CheckUnionIsTruth(c.dir, c.truth, counted);
}

inline constexpr const char* kTakeover =
    " --set frontier.min_delay_s=0.05 --set checkpoint.interval_s=1"
    " --set cluster.shared_dir={dir}";

// Waits up to `limit` s until NODE's crawler.log contains `what`.
inline bool WaitForLog(const ClusterCrawl& c, const std::string& node,
                       const std::string& what, double limit) {
  return testing::WaitFor(
      [&] {
        return ReadText(c.dir + "/" + node + "/crawler.log").find(what) !=
               std::string::npos;
      },
      limit);
}

}  // namespace crawler::engine::cluster_fixture

#endif  // CRAWLER_TESTS_TAKEOVER_HELPERS_H_
