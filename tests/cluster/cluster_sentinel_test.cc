// Redis behind Sentinel, with the real binary, redis-server and Debian's
// redis-sentinel: the nodes ask the sentinels for the primary at every
// (re)connect, every write of theirs waits for a replica
// (cluster.wait_replicas), and a primary killed -9 mid-crawl is followed to
// the replica the sentinels promote, with no node restarted.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "cluster/redis/redis.h"
#include "cluster_fixture.h"
#include "crawl_output.h"
#include "loopback.h"
#include "run_command.h"

namespace crawler::cluster {
namespace {

using namespace engine::cluster_fixture;  // NOLINT: the shared fixture

constexpr const char* kMaster = "crawlmain";

// Three sentinels watching `primary` as kMaster (quorum 2, down after 1 s:
// scripts/redis-local.sh sentinel), the test's children, stopped by the
// destructor.
class Sentinels {
 public:
  Sentinels(const std::string& dir, unsigned primary) {
    for (int i = 0; i < 3; ++i) {
      const unsigned port = testing::FreePort();
      const std::string own = dir + "/sentinel" + std::to_string(i);
      std::filesystem::create_directories(own);
      const std::string name = own + "/sentinel-" + std::to_string(port);
      try {
        pids_.push_back(testing::StartLocalRedis("sentinel " + std::to_string(port) +
                                                     " " + own + " " + kMaster + " " +
                                                     std::to_string(primary),
                                                 port, name + ".out", name + ".log"));
      } catch (...) {
        Stop();  // a constructor that throws runs no destructor
        throw;
      }
      ports_.push_back(port);
    }
  }
  ~Sentinels() { Stop(); }
  Sentinels(const Sentinels&) = delete;
  Sentinels& operator=(const Sentinels&) = delete;

  // The nodes' flags: no cluster.redis, the sentinels and the name.
  std::string Flags() const {
    std::string list;
    for (unsigned p : ports_)
      list += std::string(list.empty() ? "" : ",") + "\"127.0.0.1:" + std::to_string(p) +
              "\"";
    return " --set cluster.redis= --set 'cluster.sentinels=[" + list +
           "]' --set cluster.sentinel_master=" + kMaster;
  }
  // Field `name` of SENTINEL MASTER as sentinel i sees it ("" if absent).
  std::string Field(size_t i, const std::string& name) const {
    CommandResult r = RunCommand("redis-cli -p " + std::to_string(ports_[i]) +
                                 " SENTINEL MASTER " + kMaster);
    const std::string key = "\n" + name + "\n", text = "\n" + r.output;
    size_t at = text.find(key);
    if (at == std::string::npos) return "";
    at += key.size();
    return text.substr(at, text.find('\n', at) - at);
  }
  // Every sentinel sees `replicas` replicas and the two other sentinels: a
  // failover can then be agreed on (the quorum, a leader by majority).
  bool Ready(unsigned replicas) const {
    for (size_t i = 0; i < ports_.size(); ++i)
      if (Field(i, "num-slaves") != std::to_string(replicas) ||
          Field(i, "num-other-sentinels") != "2")
        return false;
    return true;
  }
  // The primary's port as every sentinel names it (0 if they differ).
  unsigned PrimaryPort() const {
    const std::string p = Field(0, "port");
    for (size_t i = 1; i < ports_.size(); ++i)
      if (Field(i, "port") != p) return 0;
    return static_cast<unsigned>(std::atoi(p.c_str()));
  }

 private:
  void Stop() {
    for (size_t i = 0; i < pids_.size(); ++i)
      testing::StopLocalRedis(pids_[i], ports_[i]);
    pids_.clear();
  }
  std::vector<unsigned> ports_;
  std::vector<pid_t> pids_;  // pids_[i] serves ports_[i]
};

std::string NewCrawl(const std::string& dir, const std::string& flags) {
  return std::string(CRAWLER_BINARY) + " crawl --seeds " + dir + "/seeds.txt --out " +
         dir + "/out --set cluster.node=a" + flags;
}

TEST_CASE(
    "Cluster config: sentinels need their primary's name, not cluster.redis beside "
    "them, HOST:PORT each; a name no sentinel knows is refused at join, naming it",
    "[cluster][sentinel]") {
  const std::string dir = TempDir("cluster_sentinel_config");
  std::ofstream(dir + "/seeds.txt") << "http://127.0.0.1:1/\n";
  auto refused = [&](const std::string& flags, const std::string& why) {
    CommandResult r = RunCommand(NewCrawl(dir, flags));
    INFO(flags << "\n" << r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains(why));
  };
  refused(" --set 'cluster.sentinels=[\"127.0.0.1:26379\"]'", "cluster.sentinel_master");
  refused(
      " --set cluster.redis=redis://127.0.0.1:1 --set 'cluster.sentinels=[\"a:1\"]' "
      "--set cluster.sentinel_master=m",
      "name the primary one way");
  refused(" --set 'cluster.sentinels=[\"127.0.0.1\"]' --set cluster.sentinel_master=m",
          "'127.0.0.1' is not HOST:PORT");
  refused(" --set cluster.sentinel_master=m", "needs cluster.sentinels");
  // A real sentinel that watches another name.
  RedisServer primary(dir + "/redis");
  Sentinels sentinels(dir, primary.port());
  std::string flags = sentinels.Flags();
  flags.replace(flags.find(kMaster), std::string(kMaster).size(), "nosuch");
  refused(flags, "no sentinel named the primary 'nosuch'");
}

TEST_CASE(
    "Redis WAIT (cluster.wait_replicas): a write no replica confirmed in time fails "
    "like a lost connection, naming the count; reads do not wait; with a replica, "
    "writes go",
    "[cluster][sentinel]") {
  testing::ScratchRedis scratch("redis_wait");
  auto address = ParseRedisUrl(scratch.server().Url());
  REQUIRE(address.ok());
  address->wait_replicas = 1;
  address->wait_timeout_ms = 100;
  auto redis = Redis::Connect(*address, 5);
  REQUIRE(redis.ok());
  auto write = (*redis)->Pipeline({{"SET", "k", "1"}, {"GET", "k"}});
  REQUIRE_FALSE(write.ok());
  CHECK_THAT(write.status().message(),
             Catch::Contains("0 of 1 replicas had the writes after 100 ms"));
  auto again = Redis::Connect(*address, 5);
  REQUIRE(again.ok());
  auto one = (*again)->Command({"SET", "k", "2"});
  REQUIRE_FALSE(one.ok());
  auto read = (*again)->Pipeline({{"GET", "k"}, {"EXISTS", "k"}});
  REQUIRE(read.ok());
  CHECK((*read)[0].Str() == "2");  // the write was made: it did not count
  RedisServer replica(scratch.dir() + "/replica");
  REQUIRE(replica.Cli("REPLICAOF 127.0.0.1 " + std::to_string(scratch.server().port())) ==
          "OK\n");
  REQUIRE(
      testing::WaitFor([&] { return replica.Info("master_link_status") == "up"; }, 120));
  // A timeout that cannot be the cause: 100 ms failed this step on two busy
  // cores (a replica just attached, its first acknowledgement late). The
  // write goes once a replica acknowledges it, however long that takes.
  address->wait_timeout_ms = 60000;
  auto patient = Redis::Connect(*address, 60);
  REQUIRE(patient.ok());
  auto confirmed = (*patient)->Pipeline({{"SET", "k", "3"}, {"INCR", "n"}});
  REQUIRE(confirmed.ok());
  CHECK((*confirmed)[1].Int() == 1);
  CHECK(replica.Cli("GET k") == "3\n");  // on the replica when it counted
}

TEST_CASE(
    "Cluster: Sentinel failover: the primary killed -9 mid-crawl, the nodes follow "
    "the sentinels to the promoted replica without a restart; every write waited for "
    "a replica, so the truth set, each URL once, every node exit 0",
    "[cluster][sentinel]") {
  const std::string dir = TempDir("cluster_sentinel");
  // Two replicas: with cluster.wait_replicas = 1 the crawl needs one left
  // after the failover (the sentinels point the other at the new primary).
  RedisServer primary(dir + "/redis"), replica1(dir + "/replica1"),
      replica2(dir + "/replica2");
  for (RedisServer* r : {&replica1, &replica2}) {
    REQUIRE(r->Cli("REPLICAOF 127.0.0.1 " + std::to_string(primary.port())) == "OK\n");
    REQUIRE(testing::WaitFor([&] { return r->Info("master_link_status") == "up"; }, 120));
  }
  Sentinels sentinels(dir, primary.port());
  REQUIRE(testing::WaitFor([&] { return sentinels.Ready(2); }, 60));

  const unsigned pages = std::max(1000u, EnvOr("CRAWLER_CLUSTER_PAGES", 2000));
  TestSite site(VirtualHosts(pages) + " --delay-ms 20", dir + "/requests.log");
  const std::string resolve = WriteSeedsAndResolve(site, dir);
  const std::set<std::string> truth = site.Truth("--max-depth 5");
  std::vector<pid_t> nodes =
      StartNodes(dir, primary, "sentinel",
                 resolve + sentinels.Flags() + " --set cluster.wait_replicas=1");
  struct Reap {
    std::vector<pid_t>& pids;
    ~Reap() {
      for (pid_t p : pids) testing::KillIfRunning(p);
    }
  } reap{nodes};
  auto fetched = [&] {
    size_t n = 0;
    for (const std::string& node : kNodes)
      n += AttemptedUrls(dir + "/" + node + "/fetch-log.jsonl", testing::LogRead::kLive)
               .size();
    return n;
  };
  REQUIRE(testing::WaitFor(
      [&] {
        // Mid-crawl: a line being written is not read (strict, it failed
        // the test once: "line 42 is not a JSON object").
        return AttemptedUrls(dir + "/n1/fetch-log.jsonl", testing::LogRead::kLive)
                   .size() >= 50;
      },
      120));
  primary.Kill();
  const size_t at_kill = fetched();
  INFO("fetched when the primary was killed: " << at_kill << " of " << truth.size());
  CHECK(at_kill < truth.size());  // mid-crawl
  // The sentinels agree on a replica (down after 1 s, then a vote).
  REQUIRE(testing::WaitFor(
      [&] {
        const unsigned p = sentinels.PrimaryPort();
        return p == replica1.port() || p == replica2.port();
      },
      60));
  const unsigned promoted = sentinels.PrimaryPort();
  WaitNodes(dir, nodes);  // each exits 0: none was fenced or gave up
  site.Stop();
  CheckUnionIsTruth(dir, truth);
  std::string logs;
  for (const std::string& n : kNodes) logs += ReadText(dir + "/" + n + "/crawler.log");
  // Every node reconnected to the promoted replica, as the sentinels named it.
  for (const std::string& n : kNodes) {
    INFO(n);
    CHECK_THAT(ReadText(dir + "/" + n + "/crawler.log"),
               Catch::Contains("reconnected to 127.0.0.1:" + std::to_string(promoted) +
                               " (sentinel master '" + kMaster + "')"));
  }
  CHECK_THAT(logs, !Catch::Contains("fenced"));
}

}  // namespace
}  // namespace crawler::cluster
