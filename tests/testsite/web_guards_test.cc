// A crawl of the synthetic internet with its traps and spam farm in scope
// (crawl.scope_domains = ["test"]): the trap guards end the traps that have
// a shape, the budgets per registered domain end the others and the farm,
// and every page of every normal host is still fetched, once. Checked at
// the server's request log.
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "crawl_output.h"
#include "testsite_crawl.h"
#include "testsite_process.h"
#include "web.h"
#include "web_crawl.h"

namespace crawler::testsite {
namespace {

using testing::ServedRequest;
using testing::TempDir;
using testing::TestSite;

// "d12.test" of "h3.d12.test": the last two labels (every name of this web
// is under the one-label suffix "test").
std::string RegisteredDomain(const std::string& name) {
  const size_t last = name.rfind('.');
  const size_t before = name.rfind('.', last - 1);
  return before == std::string::npos ? name : name.substr(before + 1);
}

size_t CountLines(const std::string& path, const std::string& needle) {
  std::ifstream in(path);
  size_t n = 0;
  for (std::string line; std::getline(in, line);)
    n += line.find(needle) != std::string::npos;
  return n;
}

TEST_CASE("Synthetic internet crawl: traps and the farm end at their guards and budgets",
          "[testsite][web]") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  WebOptions o;
  o.hosts = 150;
  o.addresses = 10;
#else
  WebOptions o;
  o.hosts = 400;
  o.addresses = 20;
#endif
  o.page_bytes = 2000;
  o.dead = 1;
  const std::string shape = "--web --hosts " + std::to_string(o.hosts) + " --addresses " +
                            std::to_string(o.addresses) + " --page-bytes 2000 --dead 1";
  std::string dir = TempDir("web-guards");
  TestSite site(shape, dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  const std::set<std::string> truth = site.Truth();
  o.port = static_cast<uint16_t>(site.port());
  const Web web(o);
  // Budgets small enough to see: 20 pages, 10 more per linking domain, 100
  // at most; queries of 8 parameters; the other guards at their defaults.
  std::ofstream(dir + "/web.toml")
      << "[crawl]\nscope_domains = [\"test\"]\ndomain_budget = 20\n"
         "domain_budget_per_linker = 10\ndomain_budget_max = 100\nmax_query_params = 8\n"
         "[fetch]\ndns_servers = [\"127.0.0.1:"
      << site.dns_port() << "\"]\ndns_timeout_s = 0.2\nretry_base_s = 0.05\n";
  const std::string out = dir + "/out";
  testing::CommandResult r = engine::testsite_crawl::Crawl(
      dir + "/seeds.txt", out,
      "--config " + dir + "/web.toml --set frontier.min_delay_s=0 " +
          "--set frontier.min_delay_ip_s=0 --set frontier.max_connections_per_host=4 " +
          std::string(engine::testsite_crawl::kExactDedup));
  INFO(r.output);
  // Losses, exit 3: the dead hosts (--dead 1) that answer SERVFAIL or nothing.
  REQUIRE(r.exit_code == 3);
  CHECK_THAT(r.output, Catch::Contains(engine::testsite_crawl::kDeadHostsLost));
  site.Stop();

  // The server's answers, by what their host is.
  std::map<std::string, int> normal;                     // URL: times served
  std::map<uint32_t, std::set<std::string>> trap_paths;  // trap: paths served
  std::map<std::string, size_t> pages_of, robots_of;     // registered domain: requests
  for (const ServedRequest& q : site.Requests()) {
    const std::string name = q.authority.substr(0, q.authority.rfind(':'));
    const HostRef ref = web.Lookup(name);
    const bool robots = q.target == "/robots.txt";
    (robots ? robots_of : pages_of)[RegisteredDomain(name)]++;
    if (robots) continue;
    if (ref.kind == HostKind::kNormal) ++normal[q.Url()];
    if (ref.kind == HostKind::kTrap) trap_paths[ref.index].insert(q.target);
  }
  // Every normal page once: no guard and no budget cut the real web.
  CHECK(normal.size() == truth.size());
  CHECK(std::all_of(normal.begin(), normal.end(), [&](const auto& n) {
    return n.second == 1 && truth.count(n.first);
  }));
  // The traps with a shape: exactly what their guards let through.
  for (uint32_t t : {uint32_t{kRepeat}, uint32_t{kQuery}}) {
    const std::vector<std::string> want = GuardedTrapPaths(t, 2, 8);
    INFO(Web::TrapName(t));
    CHECK(trap_paths[t] == std::set<std::string>(want.begin(), want.end()));
  }
  // The others, and each farm domain: their fetches (robots.txt included)
  // within their budgets, 20 + 10 per other registered domain linking to
  // them; and the budget used (more than half of the least).
  auto budget = [&](const std::set<std::string>& linkers) {
    return std::min<size_t>(100, 20 + 10 * linkers.size());
  };
  for (uint32_t t : {uint32_t{kCalendar}, uint32_t{kSession}, uint32_t{kSoft404}}) {
    std::set<std::string> linkers;
    for (uint32_t w = 0; w < 2; ++w)
      linkers.insert(RegisteredDomain(web.HostName(web.Linker(t, w))));
    const std::string domain = RegisteredDomain(Web::TrapName(t));
    INFO(domain);
    CHECK(pages_of[domain] >= 10);
    CHECK(pages_of[domain] + robots_of[domain] <= budget(linkers));
  }
  for (uint32_t k = 0; k < o.farm_domains; ++k) {
    // Linked from the farm's two normal linkers and the other farm domains.
    std::set<std::string> linkers;
    for (uint32_t w = 0; w < 2; ++w)
      linkers.insert(RegisteredDomain(web.HostName(web.Linker(kTraps, w))));
    for (uint32_t j = 0; j < o.farm_domains; ++j)
      if (j != k) linkers.insert("farm" + std::to_string(j) + ".test");
    const std::string domain = "farm" + std::to_string(k) + ".test";
    INFO(domain);
    // Its endless hosts' robots.txt fetches count: all within the budget.
    CHECK(pages_of[domain] + robots_of[domain] <= budget(linkers));
  }
  CHECK(pages_of["farm0.test"] >= 5);
  // Counted by reason, and each host's first skip logged once.
  const boost::json::object guarded = StatsPart(out, "crawl").at("guarded").as_object();
  INFO(boost::json::serialize(guarded));
  CHECK(guarded.at("repeated_segments").to_number<uint64_t>() >= 1);
  CHECK(guarded.at("query_params").to_number<uint64_t>() >= 1);
  CHECK(guarded.at("domain_urls").to_number<uint64_t>() >= 1);
  CHECK(CountLines(out + "/crawler.log",
                   "www.repeat.test:" + std::to_string(o.port) +
                       ": a URL skipped by the repeated_segments") == 1);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace crawler::testsite
