// The crawler's DNS (crawler/resolver.h) against a real DNS server: the
// synthetic internet's (`crawler-testsite --web`, UDP and TCP on
// 127.0.0.1), whose answers the test knows from the same model (web.h).
#include "crawler/resolver.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <set>
#include <string>
#include <thread>

#include "crawl_output.h"
#include "testsite_process.h"
#include "web.h"

namespace crawler::engine {
namespace {

using testing::TempDir;
using testing::TestSite;
using testsite::Web;
using testsite::WebOptions;

// Asks until the answer is no longer pending (at most `limit`).
Resolver::Answer Settle(Resolver& r, const std::string& host,
                        std::chrono::milliseconds limit = std::chrono::seconds(60)) {
  Resolver::Answer a = r.Lookup(host);
  const auto end = std::chrono::steady_clock::now() + limit;
  while (a.kind == Resolver::Kind::kPending && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    a = r.Lookup(host, /*count=*/false);
  }
  return a;
}

// Polls `done` until it holds (true) or 60 s pass (false).
template <typename F>
bool WaitFor(F done) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

struct Site {
  explicit Site(const std::string& args)
      : dir(TempDir("resolver")), site("--web " + args, dir + "/requests.log") {
    REQUIRE(site.dns_port() != 0);
  }
  std::string server() const { return "127.0.0.1:" + std::to_string(site.dns_port()); }
  std::string dir;
  TestSite site;
};

TEST_CASE("Resolver: addresses, CNAME chains, the cache and its TTL bounds",
          "[engine][resolver]") {
  Site s("--hosts 100 --addresses 10");
  WebOptions o;
  o.hosts = 100;
  o.addresses = 10;
  o.port = static_cast<uint16_t>(s.site.port());
  const Web web(o);
  // The cache's clock is stepped by hand: the TTL's 90% and 100% marks are
  // crossed by the test, not by how long a loaded machine takes.
  std::atomic<int64_t> clock_ms{1'000'000};
  auto made = Resolver::Create({.servers = {s.server()},
                                .min_ttl_s = 0.3,
                                .max_ttl_s = 0.3,
                                .now_ms = [&clock_ms] { return clock_ms.load(); }});
  REQUIRE(made.ok());
  Resolver& r = **made;
  // Hosts 3 and 7 answer through CNAME chains of one and two hops.
  for (uint32_t h : {0u, 3u, 7u, 42u}) {
    INFO(web.HostName(h));
    const Resolver::Answer a = Settle(r, web.HostName(h));
    REQUIRE(a.kind == Resolver::Kind::kAddress);
    CHECK(a.address == Web::IpText(Web::AddressIp(web.HostAddress(h))));
  }
  DnsFigures f = r.Figures();
  CHECK(f.queries == 4);
  CHECK(f.misses == 4);
  CHECK(f.entries == 4);
  // Answered from the cache, no query sent.
  CHECK(r.Lookup(web.HostName(0)).kind == Resolver::Kind::kAddress);
  CHECK(r.Figures().hits == 1);
  CHECK(r.Figures().queries == 4);
  // Before 90% of the (clamped) TTL, nothing is sent.
  clock_ms += 260;
  CHECK(r.Lookup(web.HostName(0)).kind == Resolver::Kind::kAddress);
  CHECK(r.Figures().refreshes == 0);
  // Past 90%, a lookup is sent ahead while the address still answers.
  clock_ms += 20;
  CHECK(r.Lookup(web.HostName(0)).kind == Resolver::Kind::kAddress);
  CHECK(r.Figures().refreshes == 1);
  CHECK(WaitFor([&] { return r.Figures().queries == 5; }));
  // Past all of it, the name waits for a new answer (host 0's was renewed
  // at 280 ms, so it still answers at 500).
  clock_ms += 220;
  CHECK(r.Lookup(web.HostName(0)).kind == Resolver::Kind::kAddress);
  CHECK(r.Lookup(web.HostName(42)).kind == Resolver::Kind::kPending);
  CHECK(Settle(r, web.HostName(42)).kind == Resolver::Kind::kAddress);
  f = r.Figures();
  CHECK(f.queries == 6);
  CHECK(f.refreshes == 1);
  CHECK(f.misses == 5);
  CHECK(f.not_found + f.failed + f.timeouts == 0);
  CHECK(f.latency_p99_ms > 0);
  CHECK(f.latency_p50_ms <= f.latency_p99_ms);
}

TEST_CASE("Resolver: NXDOMAIN is kept, SERVFAIL and silence fail and are asked again",
          "[engine][resolver]") {
  Site s("--hosts 10 --addresses 2");
  std::atomic<int64_t> clock_ms{1000000};  // the cache's clock, stepped by hand
  auto made = Resolver::Create({.servers = {s.server()},
                                .negative_ttl_s = 60,
                                .timeout_s = 0.1,
                                .tries = 2,
                                .now_ms = [&clock_ms] { return clock_ms.load(); }});
  REQUIRE(made.ok());
  Resolver& r = **made;
  const Resolver::Answer gone = Settle(r, "www.gone0.test");
  CHECK(gone.kind == Resolver::Kind::kNotFound);
  CHECK(gone.error.find("NXDOMAIN") != std::string::npos);
  CHECK(r.Lookup("www.gone0.test").kind == Resolver::Kind::kNotFound);  // kept
  const Resolver::Answer broken = Settle(r, "www.broken0.test");
  CHECK(broken.kind == Resolver::Kind::kFailed);
  // Silence: two tries, 0.1 s then 0.2 s.
  const auto start = std::chrono::steady_clock::now();
  const Resolver::Answer silent = Settle(r, "www.silent0.test");
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(silent.kind == Resolver::Kind::kFailed);
  CHECK(waited >= 0.25);
  // A failure is kept a second only: then the name is asked again.
  clock_ms += 1001;
  CHECK(r.Lookup("www.broken0.test").kind == Resolver::Kind::kPending);
  CHECK(Settle(r, "www.broken0.test").kind == Resolver::Kind::kFailed);
  const DnsFigures f = r.Figures();
  CHECK(f.not_found == 1);
  CHECK(f.failed == 2);
  CHECK(f.timeouts == 1);
  CHECK(f.queries == 4);
}

TEST_CASE(
    "Resolver: every address of an answer is kept; a dead mark skips one for every "
    "host past the answer; Healthy until two names fail with nothing answered since",
    "[engine][resolver]") {
  Site s("--hosts 10 --addresses 2 --dead-first 2");
  WebOptions o;
  o.hosts = 10;
  o.addresses = 2;
  o.dead_first = 2;
  const Web web(o);
  const std::string name = web.HostName(1);  // 1 % 2 == 1: a dead address first
  const std::string dead = Web::IpText(Web::DeadIp(1));
  const std::string live = Web::IpText(Web::AddressIp(web.HostAddress(1)));
  std::atomic<int64_t> clock_ms{1'000'000};
  auto made = Resolver::Create(
      {.servers = {s.server()}, .min_ttl_s = 60, .max_ttl_s = 60, .now_ms = [&clock_ms] {
         return clock_ms.load();
       }});
  REQUIRE(made.ok());
  Resolver& r = **made;
  CHECK(r.Healthy());  // nothing failed yet
  CHECK(Settle(r, name).address == dead);
  CHECK(r.Healthy());
  // One name failing, however often, is its own failure; a second name
  // failing too says the resolver is down. That failure asks the last
  // name answered again (a probe), whose answer ends the outage.
  CHECK(Settle(r, "www.broken0.test").kind == Resolver::Kind::kFailed);
  CHECK(r.Healthy());
  clock_ms += 1001;
  CHECK(Settle(r, "www.broken0.test").kind == Resolver::Kind::kFailed);
  CHECK(r.Healthy());
  const uint64_t refreshes = r.Figures().refreshes;
  CHECK(Settle(r, "www.broken1.test").kind == Resolver::Kind::kFailed);
  CHECK(WaitFor([&] { return r.Healthy(); }));
  CHECK(r.Figures().refreshes == refreshes + 1);
  // A dead mark outlives the answer, is the address's, and doubles when
  // the address fails again soon after it ended.
  const int64_t t = clock_ms.load();
  CHECK(r.MarkDead(name, dead));  // another is left
  CHECK(r.Lookup(name).address == live);
  clock_ms = t + 1000;
  CHECK_FALSE(r.MarkDead("unknown.test", live));  // no such host; `live` marked
  CHECK(r.Lookup(name).address == dead);          // every one marked: the first to end
  clock_ms = t + 61'000;                          // the answer expired; a new one
  CHECK(Settle(r, name).address == dead);         // `live`'s mark was the later
  clock_ms = t + 601'000;                         // `dead`'s mark ended (600 s)
  CHECK(Settle(r, name).address == dead);
  CHECK(r.MarkDead(name, dead));  // again: 1,200 s now
  clock_ms = t + 1'300'000;       // 600 s would have ended
  CHECK(Settle(r, name).address == live);
  clock_ms = t + 1'802'000;
  CHECK(Settle(r, name).address == dead);
  CHECK(r.Figures().dead_addresses == 2);
}

TEST_CASE(
    "Resolver: fetch.ipv6 on asks AAAA with A, off asks A only, auto as the "
    "machine's routes allow",
    "[engine][resolver]") {
  Site s("--hosts 10 --addresses 2 --ipv6-every 2");
  WebOptions o;
  o.hosts = 10;
  o.addresses = 2;
  const Web web(o);
  const std::string name = web.HostName(1);  // 1 % 2 == 1: AAAA ::1 too
  const std::string v4 = Web::IpText(Web::AddressIp(web.HostAddress(1)));
  auto make = [&](Ipv6 ipv6) {
    auto made = Resolver::Create({.servers = {s.server()}, .ipv6 = ipv6});
    REQUIRE(made.ok());
    return std::move(made).value();
  };
  {
    auto r = make(Ipv6::kOn);
    CHECK(r->BothFamilies());
    // Both kept, in c-ares's order: the first marked dead leaves the other.
    const std::string first = Settle(*r, name).address;
    CHECK(r->MarkDead(name, first));
    const std::string second = r->Lookup(name).address;
    CHECK(std::set<std::string>{first, second} == std::set<std::string>{"::1", v4});
    CHECK(Settle(*r, web.HostName(0)).address ==  // no AAAA: its A alone
          Web::IpText(Web::AddressIp(web.HostAddress(0))));
  }
  {
    auto r = make(Ipv6::kOff);
    CHECK_FALSE(r->BothFamilies());
    CHECK(Settle(*r, name).address == v4);
    CHECK_FALSE(r->MarkDead(name, v4));  // the only one
  }
  CHECK(make(Ipv6::kAuto)->BothFamilies() == Resolver::Ipv6Routed());
}

TEST_CASE("Resolver: a host that moved is found at its new address",
          "[engine][resolver]") {
  Site s("--hosts 10 --addresses 5 --move-after-s 1");
  WebOptions o;
  o.hosts = 10;
  o.addresses = 5;
  o.move_after_s = 1;
  const Web web(o);
  const std::string name = web.HostName(web.MovedHost());
  auto made =
      Resolver::Create({.servers = {s.server()}, .min_ttl_s = 0, .max_ttl_s = 0.2});
  REQUIRE(made.ok());
  Resolver& r = **made;
  const std::string before =
      Web::IpText(Web::AddressIp(web.HostAddress(web.MovedHost())));
  const std::string after =
      Web::IpText(Web::AddressIp(web.HostAddress(web.MovedHost(), 2.0)));
  REQUIRE(before != after);
  CHECK(Settle(r, name).address == before);
  // The server moves it 1 s after its first question; the cached answer
  // expires (0.2 s at most) and the new address is asked for, not kept.
  CHECK(testing::WaitFor([&] { return Settle(r, name).address == after; }, 60));
  // Forget drops an entry at once (a 421 from its address).
  r.Forget(name);
  CHECK(r.Lookup(name).kind == Resolver::Kind::kPending);
}

TEST_CASE("Resolver: a server that is not an address is refused by name",
          "[engine][resolver]") {
  auto made = Resolver::Create({.servers = {"dns.example:53"}});
  REQUIRE_FALSE(made.ok());
  CHECK(made.status().message().find("dns.example:53") != std::string::npos);
}

}  // namespace
}  // namespace crawler::engine
