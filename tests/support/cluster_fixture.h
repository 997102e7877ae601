// The fixture of the cluster tests (cluster_test.cc, cluster_takeover_test.cc):
// three nodes of the real binary against a real redis-server and
// crawler-testsite (a 200-virtual-host site), and the oracle: the nodes'
// fetch logs together are the site's truth set, each URL once.
#ifndef CRAWLER_TESTS_CLUSTER_FIXTURE_H_
#define CRAWLER_TESTS_CLUSTER_FIXTURE_H_

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "crawl_output.h"
#include "redis_server.h"
#include "run_command.h"
#include "tcp_proxy.h"
#include "testsite_process.h"

namespace crawler::engine::cluster_fixture {

using testing::AttemptedUrls;
using testing::CommandResult;
using testing::ReadText;
using testing::RedisServer;
using testing::RunCommand;
using testing::ServedRequest;
using testing::Spawn;
using testing::TcpProxy;
using testing::TempDir;
using testing::TestSite;
using testing::WaitExitFor;
using testing::WarcNotAsLogged;

inline unsigned EnvOr(const char* name, unsigned fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v ? static_cast<unsigned>(std::atoi(v)) : fallback;
}

// Every host's requests: never two at once, never closer than `delay`.
inline void CheckPoliteness(const std::vector<ServedRequest>& all, double delay) {
  std::map<std::string, std::vector<ServedRequest>> by_port;
  for (const ServedRequest& q : all) by_port[q.authority].push_back(q);
  double shortest = 1e9;
  size_t overlaps = 0;
  for (auto& [port, reqs] : by_port) {
    std::sort(reqs.begin(), reqs.end(),
              [](auto& a, auto& b) { return a.start_us < b.start_us; });
    for (size_t i = 1; i < reqs.size(); ++i) {
      shortest = std::min(
          shortest, static_cast<double>(reqs[i].start_us - reqs[i - 1].start_us) / 1e6);
      if (reqs[i].start_us < reqs[i - 1].reply_us) ++overlaps;  // before its answer
    }
  }
  INFO(by_port.size() << " hosts; shortest interval " << shortest << " s");
  CHECK(overlaps == 0);
  CHECK(shortest >= delay);
}

// The nodes' body limit (fetch.max_body_bytes), and the size of each host's
// /huge page just above it (so it is still cut). Not the defaults' 10 MiB and
// 12 MiB: the 150 /huge pages a crawl fetches (the other 50 hosts' robots.txt
// answers 500) were 1.5 GiB of bodies per crawl, copied, digested and
// compressed into the WARCs (perf -a of a 400-page crawl:
// libdeflate 24% of all the CPU samples, 34% of the nodes'), which cost
// every cluster test and exercised nothing of the cluster.
inline constexpr unsigned kBodyLimit = 256 * 1024;

inline std::string NodeCommand(const std::string& dir, const std::string& redis,
                               const std::string& job, const std::string& node,
                               const std::string& extra = "",
                               const std::string& out = "") {
  return std::string(CRAWLER_BINARY) + " crawl --seeds " + dir + "/seeds.txt --out " +
         dir + "/" + (out.empty() ? node : out) + " --set cluster.redis=" + redis +
         " --set cluster.job=" + job + " --set cluster.node=" + node +
         " --set cluster.min_nodes=3 --set cluster.shards=64"
         " --set cluster.heartbeat_s=0.5 --set crawl.max_depth=5"
         " --set crawl.max_connections=8 --set frontier.min_delay_s=0.02"
         // 200 virtual hosts on one loopback address stand for 200 servers:
         // no politeness per address, on the node or over the job (whose turns
         // cost each request a Redis round trip: 10-17 s more a test when it
         // was two).
         " --set frontier.min_delay_ip_s=0 --set frontier.max_connections_per_ip=100000"
         " --set cluster.ip_politeness=false"
         " --set dedup.capacity=2000 --set dedup.error_rate=1e-7"
         " --set fetch.max_body_bytes=" +
         std::to_string(kBodyLimit) + " " + extra;
}

inline const std::vector<std::string> kNodes = {"n1", "n2", "n3"};

// A node's stdout+stderr (DIR/NODE.out): its first and last 10,000
// characters (a sanitizer's report is at the end; exit code 66 is TSan's).
inline std::string NodeOutput(const std::string& dir, const std::string& node) {
  std::string out = ReadText(dir + "/" + node + ".out");
  if (out.size() <= 20000) return out;
  return out.substr(0, 10000) + "\n[...]\n" + out.substr(out.size() - 10000);
}

// For a node that gets SIGSTOP: its transfers open at the stop must not time
// out at SIGCONT (a timed-out page's links would be missing from the truth set).
inline constexpr const char* kLongTimeouts =
    " --set fetch.timeout_s=300 --set fetch.connect_timeout_s=300"
    " --set fetch.low_speed_time_s=300";

// Entries in `dir` (0 if it does not exist).
inline size_t FilesIn(const std::string& dir) {
  size_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); ++it)
    ++n;
  return n;
}

// The testsite flags for a 200-host site on virtual hosts: one port, the Host
// header picks the host (h0.site.test ... h199.site.test).
inline std::string VirtualHosts(unsigned pages) {
  return "--pages " + std::to_string(pages) +
         " --hosts 200 --slow-ms 10 --vhosts site.test --huge-bytes " +
         std::to_string(kBodyLimit + kBodyLimit / 8);
}

// Writes DIR/seeds.txt and DIR/resolve.toml (fetch.resolve: every virtual
// host name -> 127.0.0.1, as curl --resolve); returns the --config flag.
inline std::string WriteSeedsAndResolve(const TestSite& site, const std::string& dir) {
  site.WriteSeeds(dir + "/seeds.txt");
  std::ofstream out(dir + "/resolve.toml");
  out << "[fetch]\nresolve = [\n";
  for (const std::string& r : site.Resolve()) out << "  \"" << r << "\",\n";
  out << "]\n";
  return "--config " + dir + "/resolve.toml";
}

// Flags of some nodes only (after the others): node -> flags.
using PerNode = std::map<std::string, std::string>;

// Starts n1..n3 of `job` (output in DIR/NODE.out); `proxy` (if given) is
// the Redis URL of node `proxied`.
inline std::vector<pid_t> StartNodes(const std::string& dir, const RedisServer& redis,
                                     const std::string& job,
                                     const std::string& extra = "",
                                     const std::string& proxied = "",
                                     const TcpProxy* proxy = nullptr,
                                     const PerNode& per_node = {}) {
  std::vector<pid_t> pids;
  for (const std::string& n : kNodes) {
    std::string url = n == proxied && proxy != nullptr ? proxy->Url() : redis.Url();
    auto own = per_node.find(n);
    pids.push_back(
        Spawn(NodeCommand(dir, url, job, n,
                          extra + (own == per_node.end() ? "" : " " + own->second)),
              dir + "/" + n + ".out"));
  }
  return pids;
}

// Waits for the nodes, 420 s in all (before ctest's 600 s TIMEOUT ends the
// test without their output); each must exit 0 (its output shown
// otherwise). Once one fails, the others are killed at once: without it
// the crawl cannot end (its shards wait for it), and each would run to the
// deadline (once 1,200 s of CI for one failed resume).
inline void WaitNodes(const std::string& dir, const std::vector<pid_t>& pids) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(420);
  std::vector<int> codes(pids.size(), -2);  // -2: still running at the deadline
  std::vector<bool> done(pids.size(), false);
  std::string failed;  // the first node that exited non-zero
  for (size_t left = pids.size();
       left > 0 && failed.empty() && std::chrono::steady_clock::now() < until;) {
    for (size_t i = 0; i < pids.size(); ++i) {
      int status = 0;
      if (done[i] || ::waitpid(pids[i], &status, WNOHANG) != pids[i]) continue;
      done[i] = true;
      --left;
      codes[i] = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      if (codes[i] != 0 && failed.empty()) failed = kNodes[i];
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (size_t i = 0; i < pids.size(); ++i) {
    if (done[i]) continue;
    ::kill(pids[i], SIGKILL);
    ::waitpid(pids[i], nullptr, 0);
  }
  for (size_t i = 0; i < pids.size(); ++i) {
    INFO(kNodes[i] << ": "
                   << (done[i] || failed.empty() ? "" : "killed: " + failed + " failed; ")
                   << NodeOutput(dir, kNodes[i]));
    CHECK(codes[i] == 0);
  }
}

// The oracle: the nodes' fetch logs together hold `truth`, each URL once.
inline void CheckUnionIsTruth(const std::string& dir, const std::set<std::string>& truth,
                              const std::vector<std::string>& nodes = kNodes) {
  std::multiset<std::string> fetched;
  std::map<std::string, std::string> by;  // URL -> the nodes that fetched it
  for (const std::string& n : nodes) {
    std::multiset<std::string> mine = AttemptedUrls(dir + "/" + n + "/fetch-log.jsonl");
    INFO(n << " fetched " << mine.size());
    CHECK(mine.size() > 0);  // every node took part
    fetched.insert(mine.begin(), mine.end());
    for (const std::string& u : mine) by[u] += " " + n;
  }
  std::set<std::string> distinct(fetched.begin(), fetched.end());
  std::string twice;  // the first few URLs fetched twice, and by whom
  for (const auto& [url, who] : by)
    if (fetched.count(url) > 1 && twice.size() < 2000) twice += url + ":" + who + "\n";
  INFO("fetched twice:\n" << twice);
  CHECK(fetched.size() == distinct.size());  // no URL twice, over all nodes
  std::vector<std::string> missing, extra;
  std::set_difference(truth.begin(), truth.end(), distinct.begin(), distinct.end(),
                      std::back_inserter(missing));
  std::set_difference(distinct.begin(), distinct.end(), truth.begin(), truth.end(),
                      std::back_inserter(extra));
  INFO("missing " << missing.size() << " (first: " << (missing.empty() ? "" : missing[0])
                  << "), extra " << extra.size());
  CHECK(missing.empty());
  CHECK(extra.empty());
}

// `text` with each "{dir}" replaced by `dir`.
inline std::string WithDir(std::string text, const std::string& dir) {
  for (size_t at = text.find("{dir}"); at != std::string::npos; at = text.find("{dir}"))
    text.replace(at, 5, dir);
  return text;
}

// One three-node crawl (n1..n3 of `job`) of a 200-virtual-host site: its
// directory, Redis, site, truth set (depth 5) and node processes. "{dir}" in
// `extra` is the test's directory; `redis_args` go to redis-server.
struct ClusterCrawl {
  ClusterCrawl(const std::string& name, const std::string& job, const std::string& extra,
               unsigned pages = EnvOr("CRAWLER_CLUSTER_PAGES", 2000),
               const std::string& redis_args = "", const std::string& site_args = "",
               const std::string& proxied = "", const PerNode& per_node = {})
      : dir(TempDir(name)),
        redis(dir + "/redis", redis_args),
        proxy(proxied.empty() ? nullptr : std::make_unique<TcpProxy>(redis.port())),
        site(VirtualHosts(pages) + " " + site_args, dir + "/requests.log"),
        resolve(WriteSeedsAndResolve(site, dir)),
        truth(site.Truth("--max-depth 5")),
        nodes(StartNodes(dir, redis, job, resolve + " " + WithDir(extra, dir), proxied,
                         proxy.get(), per_node)),
        job_name(job) {}
  // Waits for every node (each must exit 0), stops the site, and checks the
  // oracle: the nodes' fetch logs together are the truth set, each URL once.
  void Finish() {
    WaitNodes(dir, nodes);
    site.Stop();
    CheckUnionIsTruth(dir, truth);
  }
  // A node still running (a REQUIRE failed before WaitNodes) is killed and
  // reaped, so that it outlives neither the test nor its Redis and site.
  ~ClusterCrawl() {
    for (pid_t pid : nodes) testing::KillIfRunning(pid);
  }
  ClusterCrawl(const ClusterCrawl&) = delete;
  ClusterCrawl& operator=(const ClusterCrawl&) = delete;
  std::string Logs() const {
    std::string logs;
    for (const std::string& n : kNodes) logs += ReadText(dir + "/" + n + "/crawler.log");
    return logs;
  }

  std::string dir;
  RedisServer redis;
  // Between node `proxied` and Redis, if one was named (a partition: Cut).
  std::unique_ptr<TcpProxy> proxy;
  TestSite site;
  std::string resolve;
  std::set<std::string> truth;
  std::vector<pid_t> nodes;
  std::string job_name;
};

// The crawl is under way on every node: each has joined (its liveness key
// is in Redis) and fetched at least one page. Up to 120 s (an ASan build
// beside other tests), then the test fails showing the nodes' output. What
// a fixed sleep "until started" guessed.
inline void WaitStarted(const ClusterCrawl& c) {
  auto started = [&c](const std::string& n) {
    return c.redis.Cli("EXISTS crawler:{" + c.job_name + "}:alive:" + n) == "1\n" &&
           !AttemptedUrls(c.dir + "/" + n + "/fetch-log.jsonl").empty();
  };
  const bool all = testing::WaitFor(
      [&] { return std::all_of(kNodes.begin(), kNodes.end(), started); }, 120);
  for (const std::string& n : kNodes) {
    INFO(n << ": " << NodeOutput(c.dir, n));
    REQUIRE((all || started(n)));
  }
}

// `crawler cluster-stats --json` of `job`, parsed.
inline boost::json::object ClusterStats(const RedisServer& redis,
                                        const std::string& job) {
  CommandResult r = RunCommand(std::string(CRAWLER_BINARY) + " cluster-stats " +
                               redis.Url() + " --job " + job + " --json");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return boost::json::parse(r.output).as_object();
}

}  // namespace crawler::engine::cluster_fixture

#endif  // CRAWLER_TESTS_CLUSTER_FIXTURE_H_
