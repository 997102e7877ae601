// Work-aware placement (crawler/src/cluster/membership/balance.h, balancer.h):
// three nodes of the real binary with cluster.shared_dir, a real
// redis-server and crawler-testsite. One node crawls its hosts slowly (a
// long politeness delay of its own), so the other two run out of work while
// it still has a backlog: it gives them its heaviest shards through the
// handoff, and the crawl stays exactly once.
#include <algorithm>
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>

#include "cluster_fixture.h"

namespace crawler::engine {
namespace {

using namespace cluster_fixture;  // NOLINT: the shared fixture

// "http://h7.site.test:PORT" of a URL.
std::string HostOf(const std::string& url) {
  return url.substr(0, url.find('/', url.find("://") + 3));
}

TEST_CASE(
    "Cluster balance: a node with a backlog gives its heaviest shards to the nodes that "
    "ran out of work (handed over, taken over): a host's pages split between it and "
    "them, each URL requested once, never two nodes on a host at once, the truth set",
    "[cluster][takeover][balance]") {
  // n1 waits 0.5 s between two requests to a host, the others 0.05 s: with
  // ~10 pages a host, n1 has ~30 s of work left when the others are done.
  ClusterCrawl c("cluster_balance", "balance",
                 " --set frontier.min_delay_s=0.05 --set checkpoint.interval_s=1"
                 " --set cluster.shared_dir={dir} --set cluster.lease_s=15",
                 1000, "", "", "", {{"n1", "--set frontier.min_delay_s=0.5"}});
  c.Finish();
  const std::string n1_log = ReadText(c.dir + "/n1/crawler.log");
  INFO(n1_log.substr(n1_log.size() > 8000 ? n1_log.size() - 8000 : 0));
  CHECK_THAT(n1_log, Catch::Contains("balance: giving"));
  boost::json::object stats = testing::ReadStats(c.dir + "/n1");
  const uint64_t given = stats.at("cluster").at("shards_given").to_number<uint64_t>();
  CHECK(given > 0);
  // The takers loaded them from n1's handoff checkpoints.
  const std::string takers =
      ReadText(c.dir + "/n2/crawler.log") + ReadText(c.dir + "/n3/crawler.log");
  CHECK_THAT(takers, Catch::Contains("from node n1 checkpoint"));
  // Hosts n1 had begun and another node finished: the work moved mid-host.
  std::set<std::string> n1_hosts, split;
  for (const std::string& u : AttemptedUrls(c.dir + "/n1/fetch-log.jsonl"))
    n1_hosts.insert(HostOf(u));
  for (const char* n : {"n2", "n3"})
    for (const std::string& u : AttemptedUrls(c.dir + "/" + n + "/fetch-log.jsonl"))
      if (n1_hosts.count(HostOf(u)) > 0) split.insert(HostOf(u));
  WARN("n1 gave " << given << " shards; " << split.size() << " of the " << n1_hosts.size()
                  << " hosts it fetched were finished by n2 or n3");
  CHECK(!split.empty());
  // Each URL answered once at the server (a handoff drains before its
  // checkpoint), and no host by two nodes at once (0.05 s: the others' delay).
  std::vector<ServedRequest> answered = c.site.FinalRequests();
  std::set<std::string> urls;
  for (const ServedRequest& q : answered) urls.insert(q.Url());
  CHECK(urls.size() == answered.size());
  CheckPoliteness(c.site.Requests(), 0.05);
}

}  // namespace
}  // namespace crawler::engine
