// crawler/src/host_table.h: robots state, the page cap, hosts.bin.
#include "engine/host_table.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>

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

}  // namespace
}  // namespace crawler::engine
