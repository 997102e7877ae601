// crawler/src/host_table.h: robots state, the page cap, the budgets per
// registered domain (engine/domain_budgets.h), hosts.bin.
#include "engine/host_table.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace crawler::engine {
namespace {

using frontier::Clock;

// A pass for a test thread (no crawl, no fork): the gate is open.
struct Unit {
  Gate gate;
  GateUnit unit{gate};
  const Gate::Pass& pass() const { return unit.pass(); }
};

std::string Encode(const HostTable& t, Clock::time_point cut) {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* mem = ::open_memstream(&buf, &size);
  REQUIRE(t.Write(mem, "hosts.bin", cut).ok());
  std::fclose(mem);
  std::string out(buf, size);
  std::free(buf);
  return out;
}

TEST_CASE("HostTable: no page before robots.txt; its rules, then the page cap",
          "[engine][host_table]") {
  Unit u;
  HostTable t("crawler", 2, 86400);
  auto now = Clock::now();
  t.RobotsStarted(u.pass(), "http://a.test", "http://a.test/robots.txt", 0);
  auto delay = t.RobotsDone(u.pass(), "http://a.test", parsers::RobotsFetch::kOk,
                            "User-agent: *\nDisallow: /private\nCrawl-delay: 3\n", now);
  CHECK(delay == 3.0);
  CHECK_FALSE(t.DecidePage(u.pass(), "http://a.test", "/private/x", now).allowed);
  auto first = t.DecidePage(u.pass(), "http://a.test", "/a", now);
  CHECK((first.allowed && !first.over_limit));
  CHECK_FALSE(t.DecidePage(u.pass(), "http://a.test", "/b", now).over_limit);
  CHECK(t.DecidePage(u.pass(), "http://a.test", "/c", now).over_limit);  // cap 2
}

TEST_CASE("HostTable: the hosts with the most pages, most first, ties by name",
          "[engine][host_table]") {
  Unit u;
  HostTable t("crawler", 100, 86400);
  auto now = Clock::now();
  const std::vector<std::pair<std::string, int>> pages = {
      {"http://e.test", 1}, {"http://c.test", 4}, {"http://a.test", 2},
      {"http://d.test", 4}, {"http://b.test", 7}, {"http://f.test", 0}};
  for (const auto& [host, n] : pages) {
    t.RobotsDone(u.pass(), host, parsers::RobotsFetch::kClientError, "", now);
    for (int i = 0; i < n; ++i) (void)t.DecidePage(u.pass(), host, "/p", now);
  }
  using Top = std::vector<std::pair<uint64_t, std::string>>;
  CHECK(t.Summarize(3).top ==
        Top{{7, "http://b.test"}, {4, "http://c.test"}, {4, "http://d.test"}});
  CHECK(t.Summarize(10).top.size() == 6);
  CHECK(t.Summarize(10).top.back() ==
        std::make_pair(uint64_t{0}, std::string("http://f.test")));
  CHECK(t.Summarize(0).top.empty());
}

TEST_CASE("HostTable: a 5xx robots.txt disallows all and is counted as blocked",
          "[engine][host_table]") {
  Unit u;
  HostTable t("crawler", 100, 86400);
  t.RobotsStarted(u.pass(), "http://b.test", "http://b.test/robots.txt", 0);
  t.RobotsDone(u.pass(), "http://b.test", parsers::RobotsFetchForStatus(503), "",
               Clock::now());
  CHECK_FALSE(t.DecidePage(u.pass(), "http://b.test", "/", Clock::now()).allowed);
  CHECK(t.Summarize(10).blocked_by_robots == 1);
}

TEST_CASE("HostTable: cached rules older than robots_cache_s ask for one refresh",
          "[engine][host_table]") {
  Unit u;
  HostTable t("crawler", 100, 10);
  auto then = Clock::now() - std::chrono::seconds(60);
  t.RobotsDone(u.pass(), "http://a.test", parsers::RobotsFetch::kOk, "", then);
  CHECK(t.DecidePage(u.pass(), "http://a.test", "/", Clock::now()).refresh_robots);
  CHECK_FALSE(t.DecidePage(u.pass(), "http://a.test", "/", Clock::now())
                  .refresh_robots);  // under way
}

TEST_CASE(
    "HostTable: hosts.bin round trip; in-flight pages are taken back; unfinished robots "
    "restart",
    "[engine][host_table]") {
  Unit u;
  HostTable t("crawler", 100, 86400);
  auto now = Clock::now();
  t.RobotsDone(u.pass(), "http://a.test", parsers::RobotsFetch::kOk,
               "User-agent: *\nDisallow: /no\n", now);
  for (int i = 0; i < 5; ++i) (void)t.DecidePage(u.pass(), "http://a.test", "/p", now);
  t.RobotsStarted(u.pass(), "http://b.test", "http://b.test/moved/robots.txt", 2);

  auto hosts = HostTable::Decode(Encode(t, now), "hosts.bin");
  REQUIRE(hosts.ok());
  REQUIRE(hosts->size() == 2);
  HostTable r("crawler", 100, 86400);
  auto restart = r.Restore(std::move(hosts).value(), {{"http://a.test", 2}}, now);
  REQUIRE(restart.size() == 1);
  CHECK(restart[0].host == "http://b.test");
  CHECK(restart[0].url == "http://b.test/moved/robots.txt");
  CHECK(restart[0].hops == 2);
  CHECK_FALSE(r.DecidePage(u.pass(), "http://a.test", "/no", now).allowed);
  auto top = r.Summarize(1).top;
  REQUIRE(top.size() == 1);
  CHECK(top[0] ==
        std::make_pair(uint64_t{3},
                       std::string("http://a.test")));  // 5 started, 2 in flight
}

TEST_CASE(
    "HostTable: a robots.txt fetch is unsettled from its start to its rules; in flight "
    "only while a fetcher has it (a cluster's drain waits for that alone)",
    "[engine][host_table]") {
  Unit u;
  HostTable t("crawler", 100, 86400);
  auto any = [](std::string_view) { return true; };
  t.RobotsStarted(u.pass(), "http://a.test", "http://a.test/robots.txt", 0);
  CHECK(t.RobotsFetching(u.pass(), any));
  CHECK_FALSE(t.RobotsInFlight(u.pass(), any));  // waiting for room
  t.SetRobotsInFlight(u.pass(), "http://a.test", true);
  CHECK(t.RobotsInFlight(u.pass(), any));
  CHECK_FALSE(t.RobotsInFlight(u.pass(),
                               [](std::string_view h) { return h == "http://b.test"; }));
  // A 5xx taken up: a retry waits out its back-off, not in flight, unsettled.
  t.SetRobotsInFlight(u.pass(), "http://a.test", false);
  CHECK_FALSE(t.RobotsInFlight(u.pass(), any));
  CHECK(t.RobotsFetching(u.pass(), any));
  // hosts.bin keeps it under way: a restore (a resume, or a shard's new
  // owner) starts it again.
  auto hosts = HostTable::Decode(Encode(t, Clock::now()), "hosts.bin");
  REQUIRE(hosts.ok());
  HostTable r("crawler", 100, 86400);
  auto restart = r.Restore(std::move(hosts).value(), {}, Clock::now());
  REQUIRE(restart.size() == 1);
  CHECK(restart[0].host == "http://a.test");
  t.RobotsDone(u.pass(), "http://a.test", parsers::RobotsFetch::kOk, "", Clock::now());
  CHECK_FALSE(t.RobotsFetching(u.pass(), any));
}

TEST_CASE("HostTable: damaged hosts.bin is rejected with the file's name",
          "[engine][host_table]") {
  Unit u;
  HostTable t("crawler", 100, 86400);
  t.RobotsDone(u.pass(), "http://a.test", parsers::RobotsFetch::kOk, "", Clock::now());
  std::string bytes = Encode(t, Clock::now());
  for (size_t n = 0; n < bytes.size(); ++n) {
    INFO("cut at " << n);
    auto r = HostTable::Decode(bytes.substr(0, n), "cp/hosts.bin");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().rfind("cp/hosts.bin: ", 0) == 0);
  }
  CHECK(HostTable::Decode("CRWLFRNT" + bytes.substr(8), "h").status().code() ==
        Status::Code::kBadMagic);
}

using frontier::UrlEntry;

UrlEntry Link(const std::string& url, const std::string& from) {
  UrlEntry e;
  e.url = url;
  e.depth = 1;
  e.referrer = from;
  return e;
}

// Reserves `entries`, each of domain `domain`, linked from `from` (domains).
std::vector<const char*> Reserve(HostTable& t, const Unit& u,
                                 const std::vector<UrlEntry>& entries,
                                 const std::string& domain, const std::string& from) {
  std::vector<std::string> d(entries.size(), domain), f(entries.size(), from);
  return t.ReserveUrls(u.pass(), entries, d, f);
}

TEST_CASE("HostTable budgets: a domain grows with the domains linking to it",
          "[engine][guards]") {
  Unit u;
  DomainBudgetOptions o;
  o.domain_budget = 2;
  o.domain_budget_per_linker = 1;
  o.domain_budget_max = 4;
  HostTable t("crawler", 1000, 86400, o);
  // A known host: each URL costs 1 (a new host's first costs 2, below).
  t.RobotsStarted(u.pass(), "http://www.farm.test", "http://www.farm.test/robots.txt", 0);
  auto links = [](int n) {
    std::vector<UrlEntry> v;
    for (int i = 0; i < n; ++i)
      v.push_back(
          Link("http://www.farm.test/" + std::to_string(i), "http://x.farm.test/"));
    return v;
  };
  // Linked only from itself: 2 URLs queued, the rest refused.
  auto r = Reserve(t, u, links(4), "farm.test", "farm.test");
  CHECK(r[0] == nullptr);
  CHECK(r[1] == nullptr);
  CHECK(std::string(r[2]) == "domain_urls");
  CHECK(std::string(r[3]) == "domain_urls");
  // Two other domains link to it (one twice): 2 + 2 = 4.
  CHECK(Reserve(t, u, links(1), "farm.test", "a.test")[0] == nullptr);
  CHECK(Reserve(t, u, links(1), "farm.test", "a.test")[0] != nullptr);
  CHECK(Reserve(t, u, links(1), "farm.test", "b.test")[0] == nullptr);
  // The maximum: a third linker adds nothing.
  CHECK(Reserve(t, u, links(1), "farm.test", "c.test")[0] != nullptr);
  // A duplicate given back makes room again.
  t.ReturnUrls(u.pass(), {"farm.test"});
  CHECK(Reserve(t, u, links(1), "farm.test", "c.test")[0] == nullptr);
  // Pages: 4 started, then the budget is spent.
  t.RobotsDone(u.pass(), "http://www.farm.test", parsers::RobotsFetch::kClientError, "",
               Clock::now());
  for (int i = 0; i < 4; ++i) {
    HostTable::PageDecision d =
        t.DecidePage(u.pass(), "http://www.farm.test", "/", Clock::now());
    CHECK(d.allowed);
    CHECK_FALSE(d.over_budget);
  }
  CHECK(t.DecidePage(u.pass(), "http://www.farm.test", "/", Clock::now()).over_budget);
  t.Uncount(u.pass(), "http://www.farm.test");
  CHECK_FALSE(
      t.DecidePage(u.pass(), "http://www.farm.test", "/", Clock::now()).over_budget);
  CHECK(t.Summarize(0).domains_at_budget == 1);
  // A host not seen yet: its robots.txt counts against the budget too.
  // (3: 2 and 1 linker). Once its robots.txt has started, 1 a URL.
  CHECK(Reserve(t, u, {Link("http://a.spam.test/1", "http://x.test/")}, "spam.test",
                "x.test")[0] == nullptr);
  t.RobotsStarted(u.pass(), "http://a.spam.test", "http://a.spam.test/robots.txt", 0);
  CHECK(Reserve(t, u, {Link("http://a.spam.test/2", "http://x.test/")}, "spam.test",
                "x.test")[0] == nullptr);
  CHECK(Reserve(t, u, {Link("http://b.spam.test/1", "http://x.test/")}, "spam.test",
                "x.test")[0] != nullptr);
}

TEST_CASE("HostTable budgets: a seed's domain has none; hosts.bin keeps them",
          "[engine][guards]") {
  Unit u;
  DomainBudgetOptions o;
  o.domain_budget = 2;
  o.domain_budget_per_linker = 1;
  o.domain_budget_max = 2;
  HostTable t("crawler", 1000, 86400, o);
  UrlEntry seed;
  seed.url = "http://www.site.test/";
  std::vector<UrlEntry> many = {seed};
  for (int i = 0; i < 50; ++i)
    many.push_back(Link("http://www.site.test/" + std::to_string(i), seed.url));
  auto r = Reserve(t, u, many, "site.test", "site.test");
  CHECK(std::count(r.begin(), r.end(), nullptr) == 51);
  // o.test: 2, its first URL's host new (robots.txt and the page).
  CHECK(Reserve(t, u, {Link("http://o.test/1", seed.url)}, "o.test", "site.test")[0] ==
        nullptr);
  CHECK(Reserve(t, u, {Link("http://o.test/2", seed.url)}, "o.test", "site.test")[0] !=
        nullptr);
  // Written and read back: the seeded domain, the counts, the linkers.
  const std::string bytes = Encode(t, Clock::now());
  auto domains = HostTable::DecodeDomains(bytes, "hosts.bin");
  REQUIRE(domains.ok());
  REQUIRE(domains->size() == 2);
  HostTable back("crawler", 1000, 86400, o);
  back.RestoreDomains(std::move(domains).value());
  CHECK(Reserve(back, u, {Link("http://www.site.test/x", "")}, "site.test", "")[0] ==
        nullptr);
  CHECK(Reserve(back, u, {Link("http://o.test/3", seed.url)}, "o.test", "site.test")[0] !=
        nullptr);
  // A damaged record is an error naming the file.
  std::string cut = bytes.substr(0, bytes.size() - 12);
  auto bad = HostTable::DecodeDomains(cut, "dir/hosts.bin");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("dir/hosts.bin") != std::string::npos);
}

}  // namespace
}  // namespace crawler::engine
