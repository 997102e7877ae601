// The synthetic internet (web.h, dns_server.h, `crawler-testsite --web`):
// its model (deterministic, heavy-tailed, traps that never end), its DNS
// asked over real UDP and TCP sockets, and a crawl of it by the real binary
// checked at the server: every page of every host exactly once, each
// request at the host's own address.
#include "web.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "crawl_output.h"
#include "dns_server.h"
#include "testsite_crawl.h"
#include "testsite_process.h"
#include "web_crawl.h"

namespace crawler::testsite {
namespace {

using testing::ServedRequest;
using testing::TempDir;
using testing::TestSite;

uint32_t Median(std::vector<uint32_t> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

TEST_CASE("Synthetic internet: the model is deterministic and heavy-tailed",
          "[testsite][web]") {
  WebOptions o;
  o.port = 8080;
  const Web a(o), b(o);
  o.seed = 2;
  const Web other(o);
  uint32_t differ = 0;
  std::vector<uint32_t> sizes, per_address(a.options().addresses),
      in_degree(a.options().hosts);
  for (uint32_t h = 0; h < a.options().hosts; ++h) {
    REQUIRE(a.Pages(h) == b.Pages(h));
    REQUIRE(a.HostAddress(h) == b.HostAddress(h));
    REQUIRE(a.Links(h, 0) == b.Links(h, 0));
    differ += a.Pages(h) != other.Pages(h) ? 1 : 0;
    sizes.push_back(a.Pages(h));
    ++per_address[a.HostAddress(h)];
    for (const auto& [t, page] : a.CrossLinks(h, 0)) ++in_degree[t];
    // Every name is its host's, and every link of its root resolves.
    const HostRef ref = a.Lookup(a.HostName(h));
    REQUIRE((ref.kind == HostKind::kNormal && ref.index == h));
  }
  CHECK(differ > a.options().hosts / 2);  // the seed matters
  // Heavy tails: most sites are tiny, a few are large; most hosts are
  // linked from one other root or none, a few from hundreds; a few
  // addresses carry hundreds of hosts.
  const uint32_t max_size = *std::max_element(sizes.begin(), sizes.end());
  CHECK(Median(sizes) <= 2);
  CHECK(max_size >= 50);
  CHECK(*std::max_element(in_degree.begin(), in_degree.end()) >=
        100 * (Median(in_degree) + 1));
  CHECK(*std::max_element(per_address.begin(), per_address.end()) >=
        10 * Median(per_address));
  CHECK(*std::min_element(per_address.begin(), per_address.end()) >= 1);
  // Pages: a tree from "/", ~30 KB of text on average.
  uint64_t bytes = 0, pages = 0;
  for (uint32_t h = 0; h < 200; ++h) {
    for (uint32_t i = 0; i < a.Pages(h); ++i) {
      const WebPage p = a.Serve({HostKind::kNormal, h, 0}, Web::PagePath(i));
      REQUIRE(p.status == 200);
      bytes += p.body.size();
      ++pages;
      if (2 * i + 1 < a.Pages(h))
        REQUIRE(p.body.find("href=\"" + Web::PagePath(2 * i + 1) + "\"") !=
                std::string::npos);
    }
    CHECK(a.Serve({HostKind::kNormal, h, 0}, Web::PagePath(a.Pages(h))).status == 404);
  }
  CHECK(bytes / pages > 20000);
  CHECK(bytes / pages < 40000);
}

TEST_CASE("Synthetic internet: traps and the spam farm never end", "[testsite][web]") {
  WebOptions o;
  o.port = 8080;
  const Web web(o);
  auto links_of = [&](const HostRef& ref, const std::string& target) {
    const WebPage p = web.Serve(ref, target);
    REQUIRE(p.status == 200);
    std::vector<std::string> hrefs;
    for (size_t at = 0; (at = p.body.find("href=\"", at)) != std::string::npos;) {
      at += 6;
      hrefs.push_back(p.body.substr(at, p.body.find('"', at) - at));
    }
    return hrefs;
  };
  // Follow the first link of each trap 200 times: every step a new URL.
  for (uint32_t t = 0; t < kTraps; ++t) {
    const HostRef ref = web.Lookup(Web::TrapName(t));
    REQUIRE(ref.kind == HostKind::kTrap);
    std::set<std::string> seen;
    std::string target = "/";
    for (int step = 0; step < 200; ++step) {
      REQUIRE(seen.insert(target).second);
      std::string href = links_of(ref, target).at(0);
      if (href[0] != '/')
        href = target.substr(0, target.rfind('/') + 1) + href;  // relative
      target = href;
    }
  }
  CHECK(links_of(web.Lookup("www.calendar.test"), "/cal/2026/12").at(0) == "/cal/2027/1");
  CHECK(links_of(web.Lookup("www.query.test"), "/q?k0=v0").at(0) == "/q?k0=v0&k1=v1");
  // The farm links only farm hosts, always new ones, on 3 addresses.
  std::set<uint32_t> addresses;
  HostRef farm = web.Lookup("p7.farm1.test");
  REQUIRE(farm.kind == HostKind::kFarm);
  std::set<std::string> hosts;
  for (int step = 0; step < 100; ++step) {
    const std::string next = links_of(farm, "/").at(0);
    REQUIRE(next.find(".farm") != std::string::npos);
    const std::string name = next.substr(7, next.rfind(':') - 7);
    hosts.insert(name);
    farm = web.Lookup(name);
    REQUIRE(farm.kind == HostKind::kFarm);
    addresses.insert(web.AddressOf(farm));
  }
  CHECK(hosts.size() >= 95);
  CHECK(addresses.size() <= 3);
  // Each trap, the farm and each dead host is linked from some normal root.
  std::string roots;
  for (uint32_t h = 0; h < o.hosts; ++h)
    for (const std::string& url : web.Links(h, 0)) roots += url + "\n";
  for (const std::string name :
       {"www.calendar.test", "www.session.test", "www.repeat.test", "www.query.test",
        "www.soft404.test", ".farm0.test", "www.gone0.test", "www.broken0.test",
        "www.silent0.test"})
    CHECK(roots.find(name) != std::string::npos);
}

// One DNS exchange with the server: over UDP (nothing within `wait_ms`:
// none) or TCP.
std::optional<std::string> Ask(unsigned port, const std::string& query, bool tcp,
                               int wait_ms = 2000) {
  int fd = ::socket(AF_INET, tcp ? SOCK_STREAM : SOCK_DGRAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  to.sin_port = htons(static_cast<uint16_t>(port));
  std::string sent = query;
  if (tcp)
    sent = std::string{static_cast<char>(query.size() >> 8),
                       static_cast<char>(query.size() & 255)} +
           query;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0 ||
      ::send(fd, sent.data(), sent.size(), 0) != static_cast<ssize_t>(sent.size())) {
    ::close(fd);
    return std::nullopt;
  }
  std::string got;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, wait_ms) <= 0) break;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
    if (!tcp) break;
    if (got.size() >= 2 && got.size() >= 2u + DnsMessage::Word(got, 0)) break;
  }
  ::close(fd);
  if (got.empty()) return std::nullopt;
  return tcp ? got.substr(2) : got;
}

// An answer read back: rcode, the A addresses and CNAME targets of its
// answer section, the TTL of its last record, whether it carries an SOA.
struct Reply {
  int rcode = -1;
  std::vector<std::string> addresses, aliases;
  uint32_t ttl = 0;
  bool soa = false;
};
Reply Read(const std::string& m) {
  Reply r;
  REQUIRE(m.size() >= 12);
  r.rcode = DnsMessage::Byte(m, 3) & 15;
  const uint16_t qd = DnsMessage::Word(m, 4), an = DnsMessage::Word(m, 6),
                 ns = DnsMessage::Word(m, 8);
  size_t at = 12;
  std::string name;
  for (uint16_t k = 0; k < qd; ++k) {
    REQUIRE(DnsMessage::ParseName(m, &at, &name));
    at += 4;
  }
  for (uint32_t k = 0; k < uint32_t{an} + ns; ++k) {
    REQUIRE(DnsMessage::ParseName(m, &at, &name));
    const uint16_t type = DnsMessage::Word(m, at), len = DnsMessage::Word(m, at + 8);
    r.ttl = DnsMessage::Long(m, at + 4);
    size_t data = at + 10;
    if (type == 1) r.addresses.push_back(Web::IpText(DnsMessage::Long(m, data)));
    if (type == 5) {
      std::string target;
      REQUIRE(DnsMessage::ParseName(m, &data, &target));
      r.aliases.push_back(target);
    }
    if (type == 6) r.soa = true;
    at += 10 + len;
  }
  REQUIRE(at == m.size());
  return r;
}

TEST_CASE("Synthetic internet DNS: A, CNAME chains, NXDOMAIN, SERVFAIL, silence, a move",
          "[testsite][web]") {
  std::string dir = TempDir("web-dns");
  TestSite site("--web --hosts 200 --addresses 20 --move-after-s 1",
                dir + "/requests.log");
  REQUIRE(site.dns_port() != 0);
  WebOptions o;
  o.hosts = 200;
  o.addresses = 20;
  o.port = static_cast<uint16_t>(site.port());
  o.move_after_s = 1;
  const Web web(o);
  auto ask = [&](const std::string& name, uint16_t type, bool tcp) {
    std::optional<std::string> m =
        Ask(site.dns_port(), DnsMessage::Query(0x4242, name, type), tcp);
    REQUIRE(m.has_value());
    REQUIRE(DnsMessage::Word(*m, 0) == 0x4242);
    return Read(*m);
  };
  for (bool tcp : {false, true}) {
    INFO((tcp ? "TCP" : "UDP"));
    for (uint32_t h : {0u, 3u, 7u, 150u}) {
      const Reply r = ask(web.HostName(h), 1, tcp);
      CHECK(r.rcode == 0);
      CHECK(r.addresses ==
            std::vector<std::string>{Web::IpText(Web::AddressIp(web.HostAddress(h)))});
      CHECK(r.aliases.size() == (h % 10 == 3 ? 1u : h % 10 == 7 ? 2u : 0u));
      CHECK(r.ttl == web.Ttl(h));
    }
    const Reply aaaa = ask(web.HostName(0), 28, tcp);  // no data: NOERROR, the SOA
    CHECK((aaaa.rcode == 0 && aaaa.addresses.empty() && aaaa.soa));
    const Reply gone = ask("www.gone0.test", 1, tcp);
    CHECK((gone.rcode == 3 && gone.soa && gone.ttl == Web::kNegativeTtl));
    CHECK(ask("www.broken0.test", 1, tcp).rcode == 2);
    CHECK(ask("www.example.com", 1, tcp).rcode == 5);
    CHECK(ask("WWW.Calendar.TEST", 1, tcp).addresses.size() == 1);
    CHECK_FALSE(
        Ask(site.dns_port(), DnsMessage::Query(1, "www.silent0.test", 1), tcp, 300));
  }
  // Host 1 moves a second after the first question for it: a new address.
  const std::string before = ask(web.HostName(1), 1, false).addresses.at(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));
  const Reply after = ask(web.HostName(1), 1, false);
  CHECK(after.ttl == 60);
  CHECK(after.addresses.at(0) != before);
  CHECK(after.addresses.at(0) == Web::IpText(Web::AddressIp(web.HostAddress(1, 2.0))));
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "Synthetic internet crawl: its DNS, every page of every host once, at its address",
    "[testsite][web]") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  const std::string shape = "--web --hosts 500 --addresses 20 --page-bytes 4000";
#else
  const std::string shape = "--web --hosts 2000 --addresses 50 --page-bytes 4000";
#endif
  // Each reply takes 20 ms, so two requests at one address overlap even
  // when a sanitizer slows the crawler down (the peak check below).
  const std::string delay = " --reply-delay-ms 20";
  std::string dir = TempDir("web-crawl");
  TestSite site(shape + delay, dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  const std::set<std::string> truth = site.Truth();
  // Every name is looked up in the site's DNS; the default scope (the seeds'
  // hosts) keeps the traps and the farm out. Three dead hosts are seeds too:
  // one NXDOMAIN, one SERVFAIL, one whose lookups are never answered.
  const std::string port = std::to_string(site.port());
  const std::vector<std::string> dead = {"www.gone0.test", "www.broken0.test",
                                         "www.silent0.test"};
  {
    std::ofstream seeds(dir + "/seeds.txt", std::ios::app);
    for (const std::string& d : dead) seeds << "http://" << d << ":" << port << "/\n";
    // IPv4 alone (fetch.ipv6 off): with A and AAAA asked together, a
    // SERVFAIL host's two queries and their retries outran the 0.2 s
    // lookup timeout under ASan on a loaded machine, and its failure was
    // counted as a timeout, which the figures below tell apart.
    std::ofstream config(dir + "/web.toml");
    config << "[fetch]\ndns_servers = [\"127.0.0.1:" << site.dns_port()
           << "\"]\ndns_timeout_s = 0.2\nretry_base_s = 0.05\nipv6 = \"off\"\n";
  }
  std::map<std::string, std::string> address_of;
  for (const std::string& r : site.Resolve()) {
    const size_t last = r.rfind(':');
    address_of[r.substr(0, last)] = r.substr(last + 1);
  }
  const std::string out = dir + "/out";
  testing::CommandResult r =
      engine::testsite_crawl::Crawl(dir + "/seeds.txt", out,
                                    "--config " + dir +
                                        "/web.toml --set frontier.min_delay_s=0 "
                                        "--set frontier.max_connections_per_host=4 "
                                        "--set frontier.min_delay_ip_s=0 "
                                        "--set frontier.max_connections_per_ip=2 " +
                                        std::string(engine::testsite_crawl::kExactDedup));
  INFO(r.output);
  // Losses, exit 3: the SERVFAIL and the silent host (their names may come
  // back); NXDOMAIN says the name does not exist, no loss.
  REQUIRE(r.exit_code == 3);
  CHECK_THAT(r.output, Catch::Contains(engine::testsite_crawl::kDeadHostsLost));
  site.Stop();
  std::multiset<std::string> attempted;
  std::map<std::string, std::string> dead_pages;  // URL: its skip reason
  size_t with_ip = 0, pages = 0;
  for (const boost::json::object& line : FetchLogLines(out)) {
    const std::string url(line.at("url").as_string());
    if (url.size() >= 11 && url.compare(url.size() - 11, 11, "/robots.txt") == 0)
      continue;
    if (std::any_of(dead.begin(), dead.end(), [&](const std::string& d) {
          return url.find(d) != std::string::npos;
        })) {
      dead_pages[url] = std::string(line.at("error").as_string());
      continue;
    }
    attempted.insert(url);
    ++pages;
    // The address each page came from, as in its WARC-IP-Address.
    if (line.contains("ip")) {
      const std::string authority = url.substr(7, url.find('/', 7) - 7);
      CHECK(std::string(line.at("ip").as_string()) == address_of[authority]);
      ++with_ip;
    }
  }
  CHECK(std::set<std::string>(attempted.begin(), attempted.end()) == truth);
  CHECK(attempted.size() == truth.size());
  CHECK(with_ip == pages);
  // The dead hosts' pages: skipped, for their names.
  CHECK(dead_pages.size() == dead.size());
  for (const auto& [url, why] : dead_pages) CHECK(why == "dns");
  // At the server: each page served once, with 200, each request at the
  // address its host resolves to, no name but the normal hosts'.
  std::map<std::string, int> served;
  size_t wrong_address = 0, not_ok = 0;
  for (const ServedRequest& q : site.Requests()) {
    if (q.target != "/robots.txt") ++served[q.Url()];
    if (address_of.count(q.authority) == 0 || address_of[q.authority] != q.local)
      ++wrong_address;
    if (q.status != 200 && q.target != "/robots.txt") ++not_ok;
  }
  CHECK(wrong_address == 0);
  CHECK(not_ok == 0);
  CHECK(served.size() == truth.size());
  CHECK(std::all_of(served.begin(), served.end(),
                    [](const auto& s) { return s.second == 1; }));
  // Politeness per address: never more than two requests at once at one
  // address (robots.txt included), however many hosts it carries; and the
  // limit was reached, so this could fail.
  int peak = 0;
  for (const auto& [address, at] : PeakPerAddress(site.Requests())) {
    INFO(address);
    CHECK(at <= 2);
    peak = std::max(peak, at);
  }
  CHECK(peak == 2);
  // The DNS figures: one lookup per host (TTLs of a minute and more outlast
  // the crawl), the dead hosts' failures by kind.
  const boost::json::object dns = DnsStats(out);
  CHECK(dns.at("enabled").as_bool());
  // NXDOMAIN confirmed: asked 1 + fetch.max_retries (3) times, each a new
  // lookup (not the cached answer), one robots.txt line each, the last final.
  CHECK(dns.at("not_found").to_number<uint64_t>() == 4);
  size_t gone_robots = 0;
  for (const boost::json::object& line : FetchLogLines(out)) {
    if (line.at("url").as_string() != "http://www.gone0.test:" + port + "/robots.txt")
      continue;
    ++gone_robots;
    CHECK(line.at("error").as_string() == "dns");
    CHECK(line.at("final").as_bool() == (line.at("attempt").to_number<int>() == 4));
  }
  CHECK(gone_robots == 4);
  CHECK(dns.at("failed").to_number<uint64_t>() >= 1);
  CHECK(dns.at("timeouts").to_number<uint64_t>() >= 1);
  CHECK(dns.at("queries").to_number<uint64_t>() >= address_of.size() + dead.size());
  CHECK(dns.at("hits").to_number<uint64_t>() > 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("Synthetic internet crawl: requests to one address min_delay_ip_s apart",
          "[testsite][web]") {
  // 40 hosts on 2 addresses, each host free to go at once (min_delay_s 0):
  // only the address's delay, 0.1 s, spaces their requests. One connection
  // an address: the next request there starts 0.1 s after the crawler had
  // the last one's response (frontier_impl.h, IpEnded), so the server sees
  // its requests at least 0.1 s apart, however late each reaches it on a
  // busy machine. (With more connections an address, starts are spaced at
  // the crawler, which the server cannot see exactly: ip_politeness_test.)
  std::string dir = TempDir("web-ip-gap");
  TestSite site("--web --hosts 40 --addresses 2 --page-bytes 2000",
                dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  std::ofstream(dir + "/web.toml")
      << "[fetch]\ndns_servers = [\"127.0.0.1:" << site.dns_port() << "\"]\n";
  testing::CommandResult r = engine::testsite_crawl::Crawl(
      dir + "/seeds.txt", dir + "/out",
      "--config " + dir +
          "/web.toml --set frontier.min_delay_s=0 --set frontier.min_delay_ip_s=0.1 "
          "--set frontier.max_connections_per_ip=1 --set crawl.max_pages=50");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  site.Stop();
  std::map<std::string, std::vector<uint64_t>> starts;
  for (const ServedRequest& q : site.Requests()) starts[q.local].push_back(q.start_us);
  size_t most = 0;
  for (auto& [address, at] : starts) {
    std::sort(at.begin(), at.end());
    uint64_t shortest = UINT64_MAX;
    for (size_t i = 1; i < at.size(); ++i)
      shortest = std::min(shortest, at[i] - at[i - 1]);
    INFO(address << ": " << at.size() << " requests, shortest gap " << shortest << " us");
    if (at.size() > 1) CHECK(shortest >= 100'000);
    most = std::max(most, at.size());
  }
  CHECK(most >= 20);  // robots.txt and pages of many hosts at one address
  std::filesystem::remove_all(dir);
}

TEST_CASE("Synthetic internet crawl: a host that moves is fetched at its new address",
          "[testsite][web]") {
  // A seed whose moving host has 20 pages or more; it moves once it has
  // served 5 (an event of the crawl's, not a time: a sanitizer build on a
  // busy machine may be slower than any time chosen here).
  WebOptions o;
  o.hosts = 20;
  o.addresses = 5;
  o.move_after_pages = 5;
  while (Web(o).Pages(Web(o).MovedHost()) < 20) ++o.seed;
  const Web web(o);
  const uint32_t moved = web.MovedHost();
  std::string dir = TempDir("web-move");
  TestSite site("--web --hosts 20 --addresses 5 --move-after-pages 5 --seed " +
                    std::to_string(o.seed),
                dir + "/requests.log");
  const std::string origin =
      "http://" + web.HostName(moved) + ":" + std::to_string(site.port());
  {
    std::ofstream(dir + "/seeds.txt") << origin << "/\n";
    std::ofstream config(dir + "/web.toml");
    config << "[fetch]\ndns_servers = [\"127.0.0.1:" << site.dns_port()
           << "\"]\ndns_min_ttl_s = 0\ndns_max_ttl_s = 0.2\nmax_retries = 5\n"
              "retry_base_s = 0.05\n[frontier]\nmin_delay_s = 0.1\n";
  }
  testing::CommandResult r =
      engine::testsite_crawl::Crawl(dir + "/seeds.txt", dir + "/out",
                                    "--config " + dir + "/web.toml " +
                                        std::string(engine::testsite_crawl::kExactDedup));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  site.Stop();
  const std::string before = Web::IpText(Web::AddressIp(web.HostAddress(moved)));
  const std::string after = Web::IpText(Web::AddressIp(web.HostAddress(moved, 2.0)));
  REQUIRE(before != after);
  // Every page once with 200, some at the old address and some at the new;
  // a request at the old one after the move (421) only before a new lookup.
  std::map<std::string, int> ok;
  std::map<std::string, int> at;
  for (const ServedRequest& q : site.Requests()) {
    if (q.target == "/robots.txt") continue;
    if (q.status == 200) {
      ++ok[q.target];
      ++at[q.local];
    } else {
      CHECK(q.status == 421);
      CHECK(q.local == before);
    }
  }
  CHECK(ok.size() == web.Pages(moved));
  CHECK(std::all_of(ok.begin(), ok.end(), [](const auto& s) { return s.second == 1; }));
  CHECK(at[before] == 5);
  CHECK(at[after] == static_cast<int>(web.Pages(moved)) - 5);
  CHECK(at.size() == 2);
  std::filesystem::remove_all(dir);
}

// A crawl of a small synthetic internet with faults (`site_args`), every
// normal host a seed, looked up in its DNS (`fetch_toml`: more [fetch]
// keys) with `sets`; checked by the callers against the truth.
struct FaultCrawl {
  std::string dir, out;
  std::set<std::string> truth;
  testing::CommandResult result;
  std::vector<ServedRequest> served;
  std::multiset<std::string> pages;  // final fetch-log lines but robots.txt
};
// `loop_seed`: the first seed's /loop/0 is a seed too (--redirect-loop).
FaultCrawl CrawlWithFaults(const std::string& name, const std::string& site_args,
                           const std::string& fetch_toml, const std::string& sets,
                           bool loop_seed = false) {
  FaultCrawl c;
  c.dir = TempDir(name);
  c.out = c.dir + "/out";
  TestSite site("--web --page-bytes 2000 --max-site-pages 30 " + site_args,
                c.dir + "/requests.log");
  site.WriteSeeds(c.dir + "/seeds.txt");
  if (loop_seed) {
    std::string first;
    std::getline(std::ifstream(c.dir + "/seeds.txt"), first);
    std::ofstream(c.dir + "/seeds.txt", std::ios::app) << first << "loop/0\n";
  }
  c.truth = site.Truth();
  std::ofstream(c.dir + "/web.toml")
      << "[fetch]\ndns_servers = [\"127.0.0.1:" << site.dns_port() << "\"]\n"
      << fetch_toml;
  c.result = engine::testsite_crawl::Crawl(
      c.dir + "/seeds.txt", c.out,
      "--config " + c.dir + "/web.toml --set frontier.min_delay_s=0 " + sets + " " +
          engine::testsite_crawl::kExactDedup);
  site.Stop();
  c.served = site.Requests();
  for (const boost::json::object& line : FetchLogLines(c.out)) {
    const std::string url(line.at("url").as_string());
    const bool final = !line.contains("final") || line.at("final").as_bool();
    if (final && !url.ends_with("/robots.txt")) c.pages.insert(url);
  }
  return c;
}

// Every page of the truth fetched once with 200, at the server too.
void CheckWhole(const FaultCrawl& c) {
  CHECK(std::set<std::string>(c.pages.begin(), c.pages.end()) == c.truth);
  CHECK(c.pages.size() == c.truth.size());
  std::map<std::string, int> ok;
  for (const ServedRequest& q : c.served)
    if (q.target != "/robots.txt" && q.status == 200) ++ok[q.Url()];
  CHECK(ok.size() == c.truth.size());
  CHECK(std::all_of(ok.begin(), ok.end(), [](const auto& s) { return s.second == 1; }));
}

TEST_CASE(
    "Synthetic internet crawl: a DNS outage at the start defers every host; none is "
    "lost",
    "[testsite][web][faults]") {
  // The DNS answers nothing for the first 4 s of the crawl. Each lookup
  // gives up after 0.6 s, and with retry_base_s = 0.05 a host's retries
  // were spent within about a second: every host was dropped ("dns").
  FaultCrawl c = CrawlWithFaults(
      "web-dns-outage", "--hosts 60 --addresses 6 --dns-outage-at-s 0 --dns-outage-s 4",
      "dns_timeout_s = 0.2\nretry_base_s = 0.05\n", "");
  INFO(c.result.output);
  REQUIRE(c.result.exit_code == 0);
  CheckWhole(c);
  const boost::json::object crawl = StatsPart(c.out, "crawl");
  CHECK(crawl.at("dns_deferred").to_number<uint64_t>() > 0);
  CHECK(crawl.at("unresolved").to_number<uint64_t>() == 0);
  CHECK(StatsPart(c.out, "dns").at("timeouts").to_number<uint64_t>() > 0);
  std::filesystem::remove_all(c.dir);
}

// Mid-crawl resolver faults: the DNS answers the first 40 queries, then
// drops (or answers SERVFAIL to) every query for 3 s. Lookups are asked
// again all through the crawl (the TTL held 0.2 s at most). Each failure
// counted as the name's own while some lookup had been answered in the
// last 30 s: retries 0.05, 0.1, 0.2 s apart were spent inside the fault
// and those hosts' pages given up.
void CheckMidCrawlDnsFault(const std::string& name, const std::string& fault) {
  FaultCrawl c = CrawlWithFaults(
      name, "--hosts 60 --addresses 6 --dns-outage-after 40 --dns-outage-s 3 " + fault,
      "dns_timeout_s = 0.2\nretry_base_s = 0.05\ndns_min_ttl_s = 0\n"
      "dns_max_ttl_s = 0.2\n",
      "");
  INFO(c.result.output);
  REQUIRE(c.result.exit_code == 0);
  CheckWhole(c);
  const boost::json::object crawl = StatsPart(c.out, "crawl");
  CHECK(crawl.at("dns_deferred").to_number<uint64_t>() > 0);  // the fault was met
  CHECK(crawl.at("gave_up").to_number<uint64_t>() == 0);
  std::filesystem::remove_all(c.dir);
}

TEST_CASE("Synthetic internet crawl: a DNS outage mid-crawl defers; none is lost",
          "[testsite][web][faults]") {
  CheckMidCrawlDnsFault("web-dns-mid", "");
}

TEST_CASE("Synthetic internet crawl: a burst of SERVFAIL mid-crawl defers; none is lost",
          "[testsite][web][faults]") {
  CheckMidCrawlDnsFault("web-dns-servfail", "--dns-outage-servfail");
}

// A page-fault crawl of `hosts` hosts on `addresses` (every `every`-th
// page with one of `faults`): per fault, the truth's pages that have it
// (expected) and the requests the server logged broken, status 0 (broken).
std::pair<std::map<PageFault, int>, std::map<PageFault, int>> CountFaults(
    const FaultCrawl& c, uint32_t hosts, uint32_t addresses, uint32_t every,
    uint32_t faults) {
  WebOptions o;
  o.hosts = hosts;
  o.addresses = addresses;
  o.page_fault_every = every;
  o.page_faults = faults;
  const Web web(o);
  auto fault_of = [&](const std::string& authority, const std::string& target) {
    const HostRef ref = web.Lookup(authority.substr(0, authority.rfind(':')));
    return ref.kind == HostKind::kNormal ? web.FaultOf(ref.index, target) : kNoFault;
  };
  std::map<PageFault, int> expected, broken;
  for (const std::string& url : c.truth) {
    const size_t path = url.find('/', 7);
    ++expected[fault_of(url.substr(7, path - 7), url.substr(path))];
  }
  for (const ServedRequest& q : c.served)
    if (q.status == 0) ++broken[fault_of(q.authority, q.target)];
  return {expected, broken};
}

// 60 hosts, every fifth (12) answering a dead address before its own
// (`flags`: how it is dead): every page once whole, one move to the next
// address per such host at most (then its live address for the rest of
// its answer's TTL, a minute at least), nothing given up.
void CrawlDeadFirst(const std::string& name, const std::string& flags,
                    const std::string& fetch_toml) {
  FaultCrawl c = CrawlWithFaults(name, "--hosts 60 --addresses 6 --dead-first 5" + flags,
                                 "retry_base_s = 0.05\n" + fetch_toml, "");
  INFO(c.result.output);
  REQUIRE(c.result.exit_code == 0);
  CheckWhole(c);
  const boost::json::object crawl = StatsPart(c.out, "crawl");
  CHECK(crawl.at("other_address").to_number<uint64_t>() >= 1);
  CHECK(crawl.at("other_address").to_number<uint64_t>() <= 12);
  CHECK(crawl.at("gave_up").to_number<uint64_t>() == 0);
  std::filesystem::remove_all(c.dir);
}

TEST_CASE(
    "Synthetic internet crawl: hosts whose first address is dead are fetched at their "
    "next one",
    "[testsite][web][faults]") {
  // 127.0.200.x, where nothing listens: refused. Only the first address
  // was ever tried: those hosts' robots.txt failed its retries and none of
  // their pages was fetched.
  CrawlDeadFirst("web-dead-first", "", "");
}

TEST_CASE(
    "Synthetic internet crawl: hosts whose first address accepts and never answers (a "
    "blackhole) are fetched at their next address after one timeout each",
    "[testsite][web][faults]") {
  // The first address takes the connection and never answers: a timeout
  // (fetch.timeout_s 2) with no byte of a response marks it dead for the
  // host, as a refused one is.
  CrawlDeadFirst("web-blackhole-first", " --dead-first-silent",
                 "connect_timeout_s = 2\ntimeout_s = 2\n");
}

TEST_CASE(
    "Synthetic internet crawl: dual-stack names whose IPv6 side is down are fetched "
    "over IPv4 (fetch.ipv6 on); off, no IPv6 address is tried",
    "[testsite][web][faults]") {
  // Every fifth host answers AAAA ::1 besides its A record; nothing of the
  // site listens on ::1, so a connection there is refused. RFC 6724 puts
  // ::1 first: each such host moves once to its IPv4 address.
  for (const char* ipv6 : {"on", "off"}) {
    FaultCrawl c = CrawlWithFaults(
        std::string("web-ipv6-") + ipv6, "--hosts 60 --addresses 6 --ipv6-every 5",
        "retry_base_s = 0.05\nipv6 = \"" + std::string(ipv6) + "\"\n", "");
    INFO(ipv6 << "\n" << c.result.output);
    REQUIRE(c.result.exit_code == 0);
    CheckWhole(c);
    const boost::json::object crawl = StatsPart(c.out, "crawl");
    const uint64_t moved = crawl.at("other_address").to_number<uint64_t>();
    if (ipv6 == std::string("on")) {
      CHECK(moved >= 1);
      CHECK(moved <= 12);
    } else {
      CHECK(moved == 0);
    }
    CHECK(crawl.at("gave_up").to_number<uint64_t>() == 0);
    std::filesystem::remove_all(c.dir);
  }
}

TEST_CASE(
    "Synthetic internet crawl: an endless redirect chain across hosts ends at "
    "fetch.max_redirects; every other page once",
    "[testsite][web][faults]") {
  // A seed at /loop/0 of one host: each hop a new URL on the next host.
  // The chain is followed as URLs of their own, five hops (the default
  // fetch.max_redirects), then left out as too_many_redirects; the crawl
  // ends by itself with the rest of the web whole.
  FaultCrawl c =
      CrawlWithFaults("web-redirect-loop", "--hosts 20 --addresses 2 --redirect-loop",
                      "retry_base_s = 0.05\n", "", /*loop_seed=*/true);
  INFO(c.result.output);
  REQUIRE(c.result.exit_code == 0);
  std::multiset<std::string> pages, loop;
  for (const std::string& u : c.pages)
    (u.find("/loop/") != std::string::npos ? loop : pages).insert(u);
  CHECK(std::set<std::string>(pages.begin(), pages.end()) == c.truth);
  CHECK(pages.size() == c.truth.size());
  CHECK(loop.size() == 6);  // /loop/0 and five hops, each once
  CHECK(std::set<std::string>(loop.begin(), loop.end()).size() == loop.size());
  const boost::json::object crawl = StatsPart(c.out, "crawl");
  CHECK(crawl.at("too_many_redirects").to_number<uint64_t>() == 1);
  std::filesystem::remove_all(c.dir);
}

TEST_CASE(
    "Synthetic internet crawl: a reset mid-body, a body short of its Content-Length and "
    "a cut gzip body are fetched again whole, each broken record marked; a 64 KB "
    "header is read",
    "[testsite][web][faults]") {
  // Every fourth page breaks the first time it is asked for (the
  // testsite logs that request with status 0), or always carries a 64 KB
  // header. Each page must end fetched once whole, its broken answer a
  // retry in the fetch log. A response cut mid-body was final: its piece
  // of a page archived and parsed as the page. A gzip body cut at its
  // Content-Length passed as whole (libcurl 7.88 does not check the
  // stream's end; engine/decoder.h does).
  const std::string kinds =
      "--page-fault reset --page-fault short --page-fault gzip --page-fault header";
  FaultCrawl c = CrawlWithFaults("web-page-faults",
                                 "--hosts 30 --addresses 3 --page-fault-every 4 " + kinds,
                                 "retry_base_s = 0.05\n", "");
  INFO(c.result.output);
  REQUIRE(c.result.exit_code == 0);
  CheckWhole(c);
  auto [expected, broken] =
      CountFaults(c, 30, 3, 4, kResetMidBody | kShortBody | kCutGzip | kHugeHeader);
  for (PageFault k : {kResetMidBody, kShortBody, kCutGzip}) {
    INFO("fault " << k);
    CHECK(expected[k] > 0);
    CHECK(broken[k] == expected[k]);  // each broke once, then came whole
  }
  CHECK(expected[kHugeHeader] > 0);
  CHECK(broken.size() == 3);
  // The fetch log: one retried attempt per broken answer.
  size_t retried = 0;
  for (const boost::json::object& line : FetchLogLines(c.out))
    if (line.contains("final") && !line.at("final").as_bool()) ++retried;
  const int cut = broken[kResetMidBody] + broken[kShortBody] + broken[kCutGzip];
  CHECK(retried >= static_cast<size_t>(cut));
  // The WARC keeps every attempt's response, each broken one marked cut
  // by the connection (WARC-Truncated: disconnect).
  CHECK(testing::WarcNotAsLogged(c.out).empty());
  const std::vector<testing::WarcRecord> records = testing::WarcRecords(c.out);
  CHECK(std::count_if(records.begin(), records.end(),
                      [](const auto& r) { return r.truncated == "disconnect"; }) == cut);
  std::filesystem::remove_all(c.dir);
}

TEST_CASE(
    "Synthetic internet crawl: a server that never answers and one that trickles a "
    "byte a second are given up at their timeouts and fetched again whole",
    "[testsite][web][faults]") {
  // Every fourth page's first request is never answered (the connection
  // held open) or trickles its body at 1 byte/s: the crawler's total and
  // low-speed timeouts (2 s, and 1,000 bytes/s over 1 s) end each, as
  // `timeout`, and the retry gets the page. No loss, no hang.
  FaultCrawl c = CrawlWithFaults(
      "web-silent-faults",
      "--hosts 12 --addresses 3 --page-fault-every 4 --page-fault silent --page-fault "
      "trickle",
      "retry_base_s = 0.05\nconnect_timeout_s = 2\ntimeout_s = 2\nlow_speed_bytes = "
      "1000\nlow_speed_time_s = 1\n",
      "--set crawl.max_connections=64");
  INFO(c.result.output);
  REQUIRE(c.result.exit_code == 0);
  CheckWhole(c);
  auto [expected, broken] = CountFaults(c, 12, 3, 4, kSilent | kTrickle);
  for (PageFault k : {kSilent, kTrickle}) {
    INFO("fault " << k);
    CHECK(expected[k] > 0);
    CHECK(broken[k] == expected[k]);  // each given up once, then fetched whole
  }
  // Each broken request ended in the crawler as `timeout` (a page slower
  // than 2 s on a busy machine may time out too: more such lines, no check
  // on their number).
  std::set<std::string> timed_out;
  for (const boost::json::object& line : FetchLogLines(c.out))
    if (line.contains("error") && line.at("error").as_string() == "timeout")
      timed_out.insert(std::string(line.at("url").as_string()));
  int broken_timed_out = 0;
  for (const ServedRequest& q : c.served)
    if (q.status == 0 && q.target != "/robots.txt")
      broken_timed_out += static_cast<int>(timed_out.count(q.Url()));
  CHECK(broken_timed_out == broken[kSilent] + broken[kTrickle]);
  std::filesystem::remove_all(c.dir);
}

TEST_CASE(
    "Synthetic internet crawl: hosts on one address hold max_connections_per_ip "
    "connections together, not one host's",
    "[testsite][web][faults]") {
  // 40 hosts on one address, each reply 50 ms late, one connection per
  // host, four per address, one worker (one libcurl multi handle). libcurl
  // counted its per-host limit (the frontier's + 1) per connect-to
  // address, so all 40 hosts shared two connections.
  FaultCrawl c = CrawlWithFaults(
      "web-shared-address", "--hosts 40 --addresses 1 --reply-delay-ms 50", "",
      "--set frontier.min_delay_ip_s=0 --set frontier.max_connections_per_host=1 "
      "--set frontier.max_connections_per_ip=4 --set crawl.max_connections=8 "
      "--set crawl.workers=1");
  INFO(c.result.output);
  REQUIRE(c.result.exit_code == 0);
  CheckWhole(c);
  const std::map<std::string, int> peak = PeakPerAddress(c.served);
  REQUIRE(peak.size() == 1);
  CHECK(peak.begin()->second == 4);  // reached, never passed
  std::filesystem::remove_all(c.dir);
}

}  // namespace
}  // namespace crawler::testsite
