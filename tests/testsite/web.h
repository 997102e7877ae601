// The synthetic internet that `crawler-testsite --web` serves: many hosts
// on few addresses, named under .test (RFC 6761: never delegated, so no
// query about them can mean a real host), with a DNS of its own
// (dns_server.h), traps and a spam farm. Like site.h it is a pure function
// of its options: the server, the DNS and the ground truth agree by
// construction, and a run can be repeated exactly.
//
// Hosts. Normal host h (0 <= h < hosts) belongs to registered domain
// d<K>.test; the first host of a domain is www.d<K>.test, the others
// h<J>.d<K>.test. Domain sizes are heavy-tailed (most domains have one
// host, a few dozens). Every host listens on one port (`port`) of its
// address; all addresses share the port.
// Addresses. Address a (0 <= a < addresses) is 127.1.(a / 250).(a % 250 + 1).
// Host h < addresses has address h (every address carries a host); the
// others draw theirs from a Zipf law of exponent address_zipf, as shared
// hosting puts thousands of hosts on a few addresses and one on most.
// Host MovedHost() (host 1) changes address (Moves()): move_after_s
// seconds after the first DNS question for it, or right after it served
// move_after_pages pages (MoveClock); its DNS answer changes, with a TTL
// of 60, and its old address answers 421 for it. Both count from an event
// of the client's, not from the server's start, so a slow client (a
// sanitizer build on a busy machine) still meets the move mid-crawl.
// Sites. Host h has Pages(h) pages, min(max_site_pages, floor(site_xmin *
// U^(-1/site_alpha))): a Pareto law, so sizes run from 1 page to
// max_site_pages. "/" is page 0, "/p/<i>.html" page i. Page i links to
// pages 2i+1 and 2i+2 (a tree: every page is reachable from "/", at depth
// floor(log2(i+1)), at most 16 for 10^5 pages), to 2 pages of its site at
// random, and to 3 other hosts' pages (half of them roots) drawn from a
// Zipf law over a fixed permutation of the hosts, so in-degree follows a
// power law. Page bodies are word filler of mean page_bytes (0.2x to 1.8x),
// gzip-encoded when the client accepts it. robots.txt: even hosts
// "Disallow: /private/" (nothing links there), odd hosts 404.
// DNS. Host h's TTL is one of 60, 300, 3600, 86400 (by a hash); h % 10 == 3
// answers through a CNAME (h<..> -> e<h>.cdn.test -> A), h % 10 == 7
// through two (-> g<h>.cdn.test -> e<h>.cdn.test -> A). Negative answers
// carry the SOA of test. with minimum 60.
// Traps, each on a registered domain of its own, linked from the roots of
// two normal hosts (TrapLinkers), each URL of them a 200 HTML page:
//   www.calendar.test  /cal/<y>/<m>: next and previous month, next year
//   www.session.test   /s/<n>?sid=<hash of the referring URL>: session ids
//   www.repeat.test    /a/b/a/b/...: each page links "a/" or "b/" (relative)
//   www.query.test     /q?k0=v0&k1=v1...: each page adds a parameter
//   www.soft404.test   every path is a 200 that links 3 new paths
// The spam farm: hosts p<I>.farm<K>.test (any I, K < farm_domains), on the
// 3 last addresses, each page linking 5 other farm hosts and 3 paths of its
// own: infinitely many hosts on a few registered domains that link only
// each other. Linked from the roots of two normal hosts.
// Dead hosts, each linked from one normal root: www.gone<K>.test answers
// NXDOMAIN, www.broken<K>.test SERVFAIL, www.silent<K>.test never
// (K < dead).
// The truth: seeds are every normal host's root, so a correct crawl fetches
// every page of every normal host (Truth). Of the traps, a crawl guarded by
// URL shape fetches exactly GuardedTrapPaths (web_crawl.h) of the repeated segments and
// the ever-longer query; the calendar, the session ids, the soft 404s and
// the farm have no shape to tell them by: only a budget per registered
// domain ends them (what a crawl fetches there depends on its order; the
// tests bound it by the budget).
#ifndef TESTS_TESTSITE_WEB_H_
#define TESTS_TESTSITE_WEB_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rng.h"

namespace crawler::testsite {

struct WebOptions {
  uint32_t hosts = 2000;  // normal hosts
  uint32_t addresses = 50;
  double address_zipf = 1.0;  // exponent of the hosts' sharing of addresses
  uint64_t seed = 1;
  uint16_t port = 0;  // the one port of every address
  uint32_t max_site_pages = 100000;
  double site_xmin = 1, site_alpha = 1.5;  // Pareto law of site sizes
  uint32_t page_bytes = 30000;             // mean page size
  uint32_t farm_domains = 2;
  uint32_t dead = 3;              // hosts of each dead kind (NXDOMAIN, SERVFAIL, silent)
  double move_after_s = 0;        // > 0: MovedHost() moves this long after ...
  uint32_t move_after_pages = 0;  // > 0: ... or after serving this many pages
  // Faults (each off at 0). Every dead_first-th normal host (h %
  // dead_first == dead_first - 1) answers two A records: first a dead
  // address, 127.0.200.(h % 250 + 1), where nothing listens (a connection
  // there is refused), then its own. The DNS server (dns_server.h) drops
  // every query (no reply) from dns_outage_at_s to dns_outage_at_s +
  // dns_outage_s after the first query it receives: a resolver outage
  // that a crawl meets however long it took to start. With
  // dns_outage_after > 0 the outage begins instead with query number
  // dns_outage_after + 1 (mid-crawl, whatever the client's speed); with
  // dns_outage_servfail it answers SERVFAIL instead of nothing. With
  // dead_first_silent the dead addresses are blackholes instead: the server
  // listens there, accepts, and never answers (until the client closes).
  uint32_t dead_first = 0;
  bool dead_first_silent = false;
  // Every ipv6_every-th normal host (h % ipv6_every == ipv6_every - 1)
  // also answers an AAAA record, ::1, where nothing of the site listens
  // (a connection there is refused): a dual-stack name whose IPv6 side is
  // down.
  uint32_t ipv6_every = 0;
  // With redirect_loop, /loop/N of normal host h redirects (302) to
  // /loop/N+1 of host h + 1 (mod hosts): an endless chain of new URLs
  // across hosts, linked from nowhere (a seed starts it), for a crawler's
  // redirect limit to end.
  bool redirect_loop = false;
  double dns_outage_at_s = 0, dns_outage_s = 0;
  uint64_t dns_outage_after = 0;
  bool dns_outage_servfail = false;
  // Page faults: every page_fault_every-th page of a normal host (by a
  // hash of host and path; robots.txt never) gets one of the kinds in
  // page_faults (PageFault bits), the kind by the same hash. Its first
  // request only is answered with the fault (the connection then closes),
  // and the later ones whole; kHeader pages carry their header every time.
  uint32_t page_fault_every = 0;
  uint32_t page_faults = 0;
};

// WebOptions::page_faults, a bit each.
enum PageFault : uint32_t {
  kNoFault = 0,
  kResetMidBody = 1,  // half the body, then a TCP reset
  kShortBody = 2,     // a Content-Length 1,000 bytes past the body, then close
  kCutGzip = 4,       // gzip, cut to half its bytes (Content-Length says so)
  kHugeHeader = 8,    // a 64 KB response header (every time: not a failure)
  kSilent = 16,       // nothing at all: the connection held open, never answered
  kTrickle = 32,      // the head, then the body at one byte a second
};

// What a host name is.
enum class HostKind {
  kNone,
  kNormal,
  kTrap,
  kFarm,
  kGone,
  kBroken,
  kSilent,
  kCdnA,
  kCdnAlias
};
enum Trap : uint32_t { kCalendar, kSession, kRepeat, kQuery, kSoft404, kTraps };

struct HostRef {
  HostKind kind = HostKind::kNone;
  uint32_t index = 0;   // normal, cdn: host; trap: Trap; farm: I; dead: K
  uint32_t domain = 0;  // farm: K
};

struct WebPage {
  int status = 200;
  std::string location;  // a redirect's target ("": none)
  std::string content_type = "text/html";
  std::string body;
  bool gzip_ok = false;
};

// One resource record of a DNS answer: an A (address) or a CNAME (target).
struct DnsRecord {
  std::string name;
  uint16_t type = 1;  // 1 A, 5 CNAME, 28 AAAA (always ::1)
  uint32_t ttl = 0;
  uint32_t address = 0;  // A: host order
  std::string target;    // CNAME
};

struct DnsAnswer {
  enum Rcode : uint8_t { kNoError = 0, kServFail = 2, kNxDomain = 3, kRefused = 5 };
  Rcode rcode = kNoError;
  bool silent = false;             // no reply at all
  std::vector<DnsRecord> records;  // the chain, CNAMEs first
  bool negative_soa = false;       // NXDOMAIN or no data: the zone's SOA
};

class Web {
 public:
  static constexpr uint32_t kMaxAddresses = 250 * 255;
  static constexpr uint32_t kNegativeTtl = 60;

  explicit Web(const WebOptions& o) : o_(o) {
    o_.addresses = std::clamp<uint32_t>(o_.addresses, 1, kMaxAddresses);
    o_.hosts = std::max<uint32_t>(o_.hosts, 1);
    // Registered domains: consecutive runs of hosts, Pareto-sized (exponent
    // 1.1, at most 50 hosts).
    for (uint32_t h = 0; h < o_.hosts;) {
      Rng rng = RngFor(0xd0, static_cast<uint32_t>(domain_first_.size()));
      uint32_t size = static_cast<uint32_t>(
          std::min(50.0, std::floor(std::pow(1 - Unit(rng), -1 / 1.1))));
      size = std::clamp<uint32_t>(size, 1, o_.hosts - h);
      domain_first_.push_back(h);
      h += size;
    }
    domain_first_.push_back(o_.hosts);
    double sum = 0;
    for (uint32_t a = 0; a < o_.addresses; ++a) {
      sum += std::pow(a + 1.0, -o_.address_zipf);
      address_cdf_.push_back(sum);
    }
    for (double& c : address_cdf_) c /= sum;
  }

  const WebOptions& options() const { return o_; }
  uint32_t domains() const { return static_cast<uint32_t>(domain_first_.size() - 1); }
  uint32_t DomainOf(uint32_t h) const {
    return static_cast<uint32_t>(
        std::upper_bound(domain_first_.begin(), domain_first_.end(), h) -
        domain_first_.begin() - 1);
  }
  uint32_t MovedHost() const { return 1 % o_.hosts; }

  // Names.
  std::string HostName(uint32_t h) const {
    const uint32_t d = DomainOf(h), j = h - domain_first_[d];
    return (j == 0 ? "www" : "h" + std::to_string(j)) + ".d" + std::to_string(d) +
           ".test";
  }
  static std::string TrapName(uint32_t t) {
    static constexpr std::array<const char*, kTraps> kNames = {
        "calendar", "session", "repeat", "query", "soft404"};
    return std::string("www.") + kNames[t] + ".test";
  }
  static std::string FarmName(uint32_t i, uint32_t k) {
    return "p" + std::to_string(i) + ".farm" + std::to_string(k) + ".test";
  }
  static const char* DeadWord(HostKind kind) {
    return kind == HostKind::kGone     ? "gone"
           : kind == HostKind::kBroken ? "broken"
                                       : "silent";
  }
  static std::string DeadName(HostKind kind, uint32_t k) {
    return std::string("www.") + DeadWord(kind) + std::to_string(k) + ".test";
  }
  std::string Origin(const std::string& name) const {
    return "http://" + name + ":" + std::to_string(o_.port);
  }
  std::string Url(uint32_t h, uint32_t i) const {
    return Origin(HostName(h)) + PagePath(i);
  }
  static std::string PagePath(uint32_t i) {
    return i == 0 ? "/" : "/p/" + std::to_string(i) + ".html";
  }

  // What `name` (lower case, no port, no trailing dot) is.
  HostRef Lookup(std::string_view name) const {
    HostRef r;
    const std::string_view kTld = ".test";
    if (name.size() <= kTld.size() || name.substr(name.size() - kTld.size()) != kTld)
      return r;
    std::string_view rest = name.substr(0, name.size() - kTld.size());
    uint32_t a = 0, b = 0;
    if (rest.substr(0, 4) == "www.") {
      std::string_view dom = rest.substr(4);
      for (uint32_t t = 0; t < kTraps; ++t)
        if (TrapName(t) == name) return {HostKind::kTrap, t, 0};
      if (Number(dom, "d", &a) && a < domains())
        return {HostKind::kNormal, domain_first_[a], a};
      for (HostKind k : {HostKind::kGone, HostKind::kBroken, HostKind::kSilent})
        if (Number(dom, DeadWord(k), &a) && a < o_.dead) return {k, a, 0};
      return r;
    }
    size_t dot = rest.find('.');
    if (dot == std::string_view::npos) return r;
    std::string_view first = rest.substr(0, dot), dom = rest.substr(dot + 1);
    if (Number(first, "h", &a) && Number(dom, "d", &b) && b < domains() && a > 0 &&
        a < domain_first_[b + 1] - domain_first_[b])
      return {HostKind::kNormal, domain_first_[b] + a, b};
    if (Number(first, "p", &a) && Number(dom, "farm", &b) && b < o_.farm_domains)
      return {HostKind::kFarm, a, b};
    if (dom == "cdn" && Number(first, "e", &a) && a < o_.hosts &&
        (a % 10 == 3 || a % 10 == 7))
      return {HostKind::kCdnA, a, 0};
    if (dom == "cdn" && Number(first, "g", &a) && a < o_.hosts && a % 10 == 7)
      return {HostKind::kCdnAlias, a, 0};
    return r;
  }

  // Addresses (host order).
  static uint32_t AddressIp(uint32_t a) {
    return (127u << 24) | (1u << 16) | ((a / 250) << 8) | (a % 250 + 1);
  }
  // WebOptions::dead_first: whether `ref` answers a dead address first, and
  // that address (127.0.200.x: nothing of the web listens on 127.0.x.y).
  bool DeadFirst(const HostRef& ref) const {
    return o_.dead_first > 0 && ref.kind == HostKind::kNormal &&
           ref.index % o_.dead_first == o_.dead_first - 1;
  }
  // WebOptions::page_faults: the fault of `target` on normal host h.
  PageFault FaultOf(uint32_t h, std::string_view target) const {
    if (o_.page_fault_every == 0 || o_.page_faults == 0 || target == "/robots.txt")
      return kNoFault;
    uint64_t x = 1469598103934665603ull;  // FNV-1a of the path
    for (char c : target) x = (x ^ static_cast<uint8_t>(c)) * 1099511628211ull;
    const uint64_t m = Mix(0xfa, Mix(h, x));
    if (m % o_.page_fault_every != 0) return kNoFault;
    std::vector<PageFault> kinds;
    for (PageFault k :
         {kResetMidBody, kShortBody, kCutGzip, kHugeHeader, kSilent, kTrickle})
      if ((o_.page_faults & k) != 0) kinds.push_back(k);
    return kinds[(m / o_.page_fault_every) % kinds.size()];
  }
  static uint32_t DeadIp(uint32_t h) {
    return (127u << 24) | (200u << 8) | (h % 250 + 1);
  }
  static std::string IpText(uint32_t ip) {
    return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 255) + "." +
           std::to_string((ip >> 8) & 255) + "." + std::to_string(ip & 255);
  }
  // The address index of `ip`, or -1 for none of ours.
  int64_t AddressIndex(uint32_t ip) const {
    if ((ip >> 16) != ((127u << 8) | 1u) || (ip & 255) == 0 || (ip & 255) > 250)
      return -1;
    const uint32_t a = ((ip >> 8) & 255) * 250 + (ip & 255) - 1;
    return a < o_.addresses ? a : -1;
  }
  bool Moves() const { return o_.move_after_s > 0 || o_.move_after_pages > 0; }
  // The address index of normal host h, `elapsed_s` on the move's clock
  // (MoveClock; < 0: not started).
  uint32_t HostAddress(uint32_t h, double elapsed_s = -1) const {
    uint32_t a = h < o_.addresses ? h : ZipfAddress(Rng{Mix(0xad, h)});
    if (h == MovedHost() && Moves() && elapsed_s >= 0 && elapsed_s >= o_.move_after_s &&
        o_.addresses > 1)
      a = (a + 1) % o_.addresses;
    return a;
  }
  // The address index `ref` is served on (normal hosts by HostAddress).
  uint32_t AddressOf(const HostRef& ref, double elapsed_s = -1) const {
    switch (ref.kind) {
      case HostKind::kNormal:
      case HostKind::kCdnA:
      case HostKind::kCdnAlias:
        return HostAddress(ref.index, elapsed_s);
      case HostKind::kTrap:
        return ZipfAddress(Rng{Mix(0x7a, ref.index)});
      case HostKind::kFarm:
        return o_.addresses - 1 -
               static_cast<uint32_t>(Mix(0xfa, ref.index) %
                                     std::min<uint32_t>(3, o_.addresses));
      default:
        return 0;
    }
  }
  uint32_t Ttl(uint32_t h) const {
    static constexpr std::array<uint32_t, 4> kTtls = {60, 300, 3600, 86400};
    return h == MovedHost() && Moves() ? 60 : kTtls[Mix(0x77, h) % 4];
  }

  // The DNS answer to (name, qtype) at `elapsed_s` on the move's clock.
  DnsAnswer Resolve(std::string_view name, uint16_t qtype, double elapsed_s) const {
    DnsAnswer ans;
    const std::string_view kTld = ".test";
    if (name != "test" &&
        (name.size() <= kTld.size() || name.substr(name.size() - kTld.size()) != kTld)) {
      ans.rcode = DnsAnswer::kRefused;  // not our zone
      return ans;
    }
    HostRef ref = Lookup(name);
    switch (ref.kind) {
      case HostKind::kNone:
      case HostKind::kGone:
        ans.rcode = DnsAnswer::kNxDomain;
        ans.negative_soa = true;
        return ans;
      case HostKind::kBroken:
        ans.rcode = DnsAnswer::kServFail;
        return ans;
      case HostKind::kSilent:
        ans.silent = true;
        return ans;
      default:
        break;
    }
    uint32_t ttl = ref.kind == HostKind::kNormal || ref.kind == HostKind::kCdnA ||
                           ref.kind == HostKind::kCdnAlias
                       ? Ttl(ref.index)
                       : 300;
    std::string at(name);
    const uint32_t h = ref.index;
    if (ref.kind == HostKind::kNormal && h % 10 == 7) {
      ans.records.push_back({at, 5, ttl, 0, "g" + std::to_string(h) + ".cdn.test"});
      at = ans.records.back().target;
    }
    if ((ref.kind == HostKind::kNormal && h % 10 == 3) ||
        (ref.kind == HostKind::kNormal && h % 10 == 7) ||
        ref.kind == HostKind::kCdnAlias) {
      ans.records.push_back({at, 5, ttl, 0, "e" + std::to_string(h) + ".cdn.test"});
      at = ans.records.back().target;
    }
    if (qtype == 1) {
      if (DeadFirst(ref)) ans.records.push_back({at, 1, ttl, DeadIp(h), ""});
      ans.records.push_back({at, 1, ttl, AddressIp(AddressOf(ref, elapsed_s)), ""});
    } else if (qtype == 28 && o_.ipv6_every > 0 && ref.kind == HostKind::kNormal &&
               h % o_.ipv6_every == o_.ipv6_every - 1) {
      ans.records.push_back({at, 28, ttl, 0, ""});
    } else
      ans.negative_soa = true;  // no data of that type (AAAA, ...)
    return ans;
  }

  // Sites.
  uint32_t Pages(uint32_t h) const {
    Rng rng{Mix(0x5e, h)};
    double n = std::floor(o_.site_xmin * std::pow(1 - Unit(rng), -1 / o_.site_alpha));
    return static_cast<uint32_t>(
        std::clamp(n, 1.0, double(std::max<uint32_t>(o_.max_site_pages, 1))));
  }
  uint64_t TotalPages() const {
    uint64_t n = 0;
    for (uint32_t h = 0; h < o_.hosts; ++h) n += Pages(h);
    return n;
  }
  // The normal hosts whose root links trap t (t < kTraps), the farm
  // (t = kTraps) or dead host t - kTraps - 1.
  uint32_t Linker(uint32_t t, uint32_t which) const {
    return static_cast<uint32_t>((7919ull * (2 * t + which) + 1) % o_.hosts);
  }

  // The absolute URLs page i of normal host h links to (its href values,
  // normalized: in-site links are written as paths).
  std::vector<std::string> Links(uint32_t h, uint32_t i) const {
    std::vector<std::string> out;
    const uint32_t n = Pages(h);
    const std::string origin = Origin(HostName(h));
    for (uint64_t c : {2ull * i + 1, 2ull * i + 2})
      if (c < n) out.push_back(origin + PagePath(static_cast<uint32_t>(c)));
    Rng rng{Mix(0x11, (uint64_t{h} << 32) | i)};
    for (int k = 0; k < 2; ++k) out.push_back(origin + PagePath(rng.Below(n)));
    for (const auto& [t, page] : CrossLinks(h, i)) out.push_back(Url(t, page));
    if (i == 0) {
      for (uint32_t t = 0; t <= kTraps; ++t)
        for (uint32_t w = 0; w < 2; ++w)
          if (Linker(t, w) == h)
            out.push_back(t < kTraps ? Origin(TrapName(t)) + "/"
                                     : Origin(FarmName(h, 0)) + "/");
      for (uint32_t k = 0; k < o_.dead; ++k) {
        HostKind kinds[] = {HostKind::kGone, HostKind::kBroken, HostKind::kSilent};
        for (uint32_t d = 0; d < 3; ++d)
          if (Linker(kTraps + 1 + 3 * k + d, 0) == h)
            out.push_back(Origin(DeadName(kinds[d], k)) + "/");
      }
    }
    return out;
  }

  // The (host, page) pairs page i of normal host h links to on other hosts
  // (or, rarely, its own): 3, half of them roots.
  std::vector<std::pair<uint32_t, uint32_t>> CrossLinks(uint32_t h, uint32_t i) const {
    std::vector<std::pair<uint32_t, uint32_t>> out;
    Rng rng{Mix(0x12, (uint64_t{h} << 32) | i)};
    for (int k = 0; k < 3; ++k) {
      const uint32_t t = LinkTarget(rng);
      out.emplace_back(t, rng.Below(2) == 0 ? 0 : rng.Below(Pages(t)));
    }
    return out;
  }

  // What `ref` serves at `target` (path and query).
  WebPage Serve(const HostRef& ref, std::string_view target) const {
    const std::string_view path = target.substr(0, target.find('?'));
    WebPage p;
    if (path == "/robots.txt") {
      if (ref.kind == HostKind::kNormal && ref.index % 2 == 0) {
        p.content_type = "text/plain";
        p.body = "User-agent: *\nDisallow: /private/\n";
      } else {
        p.status = 404;
        p.content_type = "text/plain";
        p.body = "no robots.txt\n";
      }
      return p;
    }
    unsigned n = 0;
    if (o_.redirect_loop && ref.kind == HostKind::kNormal &&
        std::sscanf(std::string(path).c_str(), "/loop/%u", &n) == 1) {
      p.status = 302;
      p.location =
          Origin(HostName((ref.index + 1) % o_.hosts)) + "/loop/" + std::to_string(n + 1);
      return p;
    }
    if (ref.kind == HostKind::kNormal) return NormalPage(ref.index, path);
    if (ref.kind == HostKind::kTrap) return TrapPage(ref.index, target);
    if (ref.kind == HostKind::kFarm) return FarmPage(ref, target);
    p.status = 404;
    p.body = "<html><body>not found</body></html>";
    return p;
  }

  // Every URL a correct crawl fetches (seeds: every normal root), in host
  // order.
  template <typename Visit>
  void ForEachTruthUrl(Visit visit) const {
    for (uint32_t h = 0; h < o_.hosts; ++h)
      for (uint32_t i = 0, n = Pages(h); i < n; ++i) visit(Url(h, i));
  }

  using Rng = SplitMix64;  // rng.h
  static double Unit(Rng& rng) { return rng.Unit(); }

  // The host a cross-host link goes to: rank r with P(r) ~ 1/(r+1) (a
  // continuous Zipf law of exponent 1), through a fixed permutation of the
  // hosts, so in-degree follows a power law and the popular hosts are
  // spread over the domains.
  uint32_t LinkTarget(Rng& rng) const {
    const double u = Unit(rng);
    uint64_t r = static_cast<uint64_t>(std::exp(u * std::log(o_.hosts + 1.0))) - 1;
    r = std::min<uint64_t>(r, o_.hosts - 1);
    return static_cast<uint32_t>((r * 2654435761ull + (o_.seed % o_.hosts)) % o_.hosts);
  }

 private:
  uint64_t Mix(uint64_t salt, uint64_t x) const {
    Rng rng{o_.seed * 0x100000001b3ULL ^ (salt << 56) ^ x};
    return rng.Next();
  }
  Rng RngFor(uint64_t salt, uint32_t x) const { return Rng{Mix(salt, x)}; }

  uint32_t ZipfAddress(Rng rng) const {
    const double u = Unit(rng);
    return static_cast<uint32_t>(
        std::min<size_t>(std::lower_bound(address_cdf_.begin(), address_cdf_.end(), u) -
                             address_cdf_.begin(),
                         o_.addresses - 1));
  }

  // "<prefix><digits>" exactly (no leading zeros) -> *n.
  static bool Number(std::string_view s, std::string_view prefix, uint32_t* n) {
    if (s.size() <= prefix.size() || s.substr(0, prefix.size()) != prefix) return false;
    s.remove_prefix(prefix.size());
    if (s.size() > 9 || (s.size() > 1 && s[0] == '0')) return false;
    uint32_t v = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + static_cast<uint32_t>(c - '0');
    }
    *n = v;
    return true;
  }

  static void Filler(Rng& rng, size_t bytes, std::string* out) {
    static constexpr std::array<std::string_view, 32> kWords = {
        "the",    "crawler", "archive", "web",     "page",   "link",   "host", "address",
        "domain", "shared",  "server",  "request", "answer", "record", "time", "memory",
        "queue",  "polite",  "budget",  "trap",    "spam",   "farm",   "of",   "and",
        "to",     "in",      "is",      "on",      "a",      "with",   "for",  "each"};
    out->append("<p>");
    const size_t end = out->size() + bytes;
    while (out->size() < end) {
      out->append(kWords[rng.Next() % kWords.size()]);
      out->push_back(rng.Below(12) == 0 ? '\n' : ' ');
    }
    out->append("</p>\n");
  }

  WebPage NormalPage(uint32_t h, std::string_view path) const {
    WebPage p;
    uint32_t i = 0;
    if (path != "/" &&
        !(path.size() > 8 && path.substr(path.size() - 5) == ".html" &&
          Number(path.substr(0, path.size() - 5), "/p/", &i) && i > 0 && i < Pages(h))) {
      p.status = 404;
      p.body = "<html><body>not found</body></html>";
      return p;
    }
    const std::string origin = Origin(HostName(h));
    p.gzip_ok = true;
    p.body = "<!doctype html>\n<html><head><title>" + HostName(h) + " page " +
             std::to_string(i) + "</title></head><body>\n";
    for (const std::string& url : Links(h, i)) {
      const bool own = url.compare(0, origin.size() + 1, origin + "/") == 0;
      p.body += "<a href=\"" + (own ? url.substr(origin.size()) : url) + "\">link</a>\n";
    }
    Rng rng{Mix(0xb0, (uint64_t{h} << 32) | i)};
    Filler(rng, static_cast<size_t>(o_.page_bytes * (0.2 + 1.6 * Unit(rng))), &p.body);
    p.body += "</body></html>\n";
    return p;
  }

  static uint64_t Fnv(std::string_view s) {
    uint64_t x = 1469598103934665603ull;
    for (unsigned char c : s) x = (x ^ c) * 1099511628211ull;
    return x;
  }

  static WebPage LinksPage(const std::string& title,
                           const std::vector<std::string>& hrefs) {
    WebPage p;
    p.body = "<html><head><title>" + title + "</title></head><body>\n";
    for (const std::string& href : hrefs) p.body += "<a href=\"" + href + "\">more</a>\n";
    p.body += "</body></html>\n";
    return p;
  }

  WebPage TrapPage(uint32_t t, std::string_view target) const {
    const std::string_view path = target.substr(0, target.find('?'));
    const std::string query(target.size() > path.size() ? target.substr(path.size() + 1)
                                                        : "");
    const uint64_t hash = Fnv(target);
    uint32_t y = 0, m = 0, n = 0;
    switch (t) {
      case kCalendar:
        if (path == "/") return LinksPage("calendar", {"/cal/2026/1"});
        if (std::sscanf(std::string(path).c_str(), "/cal/%u/%u", &y, &m) == 2 && m >= 1 &&
            m <= 12 && path == "/cal/" + std::to_string(y) + "/" + std::to_string(m)) {
          const uint32_t ny = m == 12 ? y + 1 : y, nm = m == 12 ? 1 : m + 1;
          const uint32_t py = m == 1 ? y - 1 : y, pm = m == 1 ? 12 : m - 1;
          return LinksPage("calendar",
                           {"/cal/" + std::to_string(ny) + "/" + std::to_string(nm),
                            "/cal/" + std::to_string(py) + "/" + std::to_string(pm),
                            "/cal/" + std::to_string(y + 1) + "/" + std::to_string(m)});
        }
        break;
      case kSession:
        if (path == "/" || (Number(path, "/s/", &n) && n < 20))
          return LinksPage("session", {"/s/" + std::to_string((n + 1) % 20) +
                                           "?sid=" + std::to_string(hash % 1000000007),
                                       "/s/" + std::to_string((n + 7) % 20) +
                                           "?sid=" + std::to_string(hash % 998244353)});
        break;
      case kRepeat: {
        // "/" or "/a/", "/a/b/", "/a/b/a/", ...: one more segment each.
        bool ok = path == "/" || (path.size() % 2 == 1);
        for (size_t k = 1; ok && k + 1 < path.size(); k += 2)
          ok = path[k] == ((k / 2) % 2 == 0 ? 'a' : 'b') && path[k + 1] == '/';
        if (ok) return LinksPage("repeat", {(path.size() / 2) % 2 == 0 ? "a/" : "b/"});
        break;
      }
      case kQuery:
        if (path == "/" || path == "/q") {
          const uint32_t k = query.empty() ? 0
                                           : 1 + static_cast<uint32_t>(std::count(
                                                     query.begin(), query.end(), '&'));
          return LinksPage("query", {"/q?" + query + (query.empty() ? "" : "&") + "k" +
                                     std::to_string(k) + "=v" + std::to_string(k)});
        }
        break;
      case kSoft404:
        return LinksPage("soft 404", {"/x" + std::to_string(hash % 1000003),
                                      "/y" + std::to_string(hash % 999983),
                                      "/z" + std::to_string(hash % 999979)});
      default:
        break;
    }
    WebPage p;
    p.status = 404;
    p.body = "<html><body>not found</body></html>";
    return p;
  }

  WebPage FarmPage(const HostRef& ref, std::string_view target) const {
    const uint64_t hash = Fnv(FarmName(ref.index, ref.domain) + std::string(target));
    std::vector<std::string> hrefs;
    Rng rng{hash};
    for (int k = 0; k < 5; ++k)
      hrefs.push_back(
          Origin(FarmName(static_cast<uint32_t>(rng.Next() % 1000000000),
                          static_cast<uint32_t>(rng.Below(o_.farm_domains)))) +
          "/");
    for (int k = 0; k < 3; ++k)
      hrefs.push_back("/w" + std::to_string(rng.Next() % 1000000007));
    return LinksPage("cheap pills", hrefs);
  }

  WebOptions o_;
  std::vector<uint32_t> domain_first_;  // domain k: hosts [first[k], first[k+1])
  std::vector<double> address_cdf_;
};

// The clock of MovedHost()'s move, shared by the DNS and the HTTP server:
// it starts at the first DNS question for the host (move_after_s) or when
// the host has served move_after_pages pages, whichever comes first.
class MoveClock {
 public:
  explicit MoveClock(const WebOptions& o) : o_(o) {}
  void OnQuestion() {
    if (o_.move_after_pages == 0) Start();
  }
  void OnPageServed() {
    if (o_.move_after_pages > 0 && ++pages_ == o_.move_after_pages) Start();
  }
  // Seconds since the start, or -1 before it.
  double Elapsed() const {
    const double origin = origin_.load();
    return origin < 0 ? -1 : Now() - origin;
  }

 private:
  void Start() {
    double none = -1;
    origin_.compare_exchange_strong(none, Now());
  }
  static double Now() {
    return std::chrono::duration<double>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  const WebOptions o_;
  std::atomic<uint32_t> pages_{0};
  std::atomic<double> origin_{-1};
};

}  // namespace crawler::testsite

#endif  // TESTS_TESTSITE_WEB_H_
