// engine/url_guards.h (a URL's shape) and the budgets per registered domain
// that HostTable keeps (engine/domain_budgets.h), with hosts.bin's 'D'
// records.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/host_table.h"
#include "engine/url_guards.h"

namespace crawler::engine {
namespace {

using frontier::Clock;
using frontier::UrlEntry;

TEST_CASE("UrlGuards: length, path segments, repeated runs, query parameters",
          "[engine][guards]") {
  UrlGuards g;
  g.max_url_length = 60;
  g.max_path_segments = 6;
  g.max_repeats = 2;
  g.max_query_params = 3;
  CHECK(TrippedGuard("http://a.test/", g) == nullptr);
  CHECK(TrippedGuard("http://a.test/x/y/z.html?a=1&b=2&c=3#f", g) == nullptr);
  CHECK(std::string(TrippedGuard("http://a.test/" + std::string(60, 'x'), g)) ==
        "url_length");
  CHECK(std::string(TrippedGuard("http://a.test/1/2/3/4/5/6/7", g)) == "path_segments");
  CHECK(TrippedGuard("http://a.test/1/2/3/4/5/6/", g) == nullptr);
  CHECK(std::string(TrippedGuard("http://a.test/a/b/a/b/a/b/", g)) ==
        "repeated_segments");
  CHECK(TrippedGuard("http://a.test/a/b/a/b/a/", g) == nullptr);
  CHECK(std::string(TrippedGuard("http://a.test/x/x/x", g)) == "repeated_segments");
  CHECK(std::string(TrippedGuard("http://a.test/q?a=1&b=2&c=3&d=4", g)) ==
        "query_params");
  // A query's slashes and a fragment are not path segments.
  CHECK(TrippedGuard("http://a.test/p?u=/x/x/x/x/x/x#/y/y/y", g) == nullptr);
  // 0 turns a guard off.
  UrlGuards off{0, 0, 0, 0};
  CHECK(TrippedGuard("http://a.test/x/x/x/x/x/x/x/x/x/x/x/x?" + std::string(5000, 'a'),
                     off) == nullptr);
  CHECK(MostRepeats("/") == 0);
  CHECK(MostRepeats("/a/b/c") == 1);
  CHECK(MostRepeats("/a/b/a/b/") == 2);
  CHECK(MostRepeats("/p/q/r/p/q/r/p/q/r/s") == 3);
}

struct BudgetUnit {
  Gate gate;
  GateUnit unit{gate};
  const Gate::Pass& pass() const { return unit.pass(); }
};

UrlEntry Link(const std::string& url, const std::string& from) {
  UrlEntry e;
  e.url = url;
  e.depth = 1;
  e.referrer = from;
  return e;
}

// Reserves `entries`, each of domain `domain`, linked from `from` (domains).
std::vector<const char*> Reserve(HostTable& t, const BudgetUnit& u,
                                 const std::vector<UrlEntry>& entries,
                                 const std::string& domain, const std::string& from) {
  std::vector<std::string> d(entries.size(), domain), f(entries.size(), from);
  return t.ReserveUrls(u.pass(), entries, d, f);
}

TEST_CASE("HostTable budgets: a domain grows with the domains linking to it",
          "[engine][guards]") {
  BudgetUnit u;
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
  BudgetUnit u;
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
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* mem = ::open_memstream(&buf, &size);
  REQUIRE(t.Write(mem, "hosts.bin", Clock::now()).ok());
  std::fclose(mem);
  const std::string bytes(buf, size);
  std::free(buf);
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
