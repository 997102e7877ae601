// The crawler's own DNS: asynchronous lookups with c-ares (Debian's
// libc-ares-dev) on one thread of their own, and a cache of their answers
// that every Fetcher of the crawl shares.
//
// Why not libcurl's resolver: it runs a thread per lookup, keeps its own
// cache with one timeout for every answer (no TTLs, no negative entries we
// control) and takes the system's servers only. Here a host's first fetch
// waits in its Fetcher, not in a worker, while its lookup runs; the answer
// goes to libcurl as CURLOPT_CONNECT_TO (the URL's name stays the Host
// header and the TLS name).
//
// The cache, by host name:
//   - an address, kept for the answer's TTL (the least TTL along a CNAME
//     chain), clamped to [min_ttl_s, max_ttl_s]; looked up again, in the
//     background, once 90% of it has passed, so a busy host never waits;
//     once it has passed, its fetches wait for the new answer (a host that
//     moved is fetched at its new address);
//   - a name that does not exist (NXDOMAIN, or no A and no AAAA record):
//     kept negative_ttl_s;
//   - a failure (SERVFAIL, REFUSED, a timeout after `tries` tries): kept 1 s,
//     long enough to reach the fetches waiting for it, which are then tried
//     again with back-off like any transient failure (fetch.max_retries),
//     or, while no lookup at all is answered (Healthy: an outage),
//     deferred without spending their retries (fetch.dns_retry_s).
//     A refresh that fails keeps the address until it expires.
// Every address of the answer is kept (up to 8), in its order; Lookup
// gives the first one not marked dead. A fetch marks an address dead
// (MarkDead) when it refused, its connect timed out, or it took the
// connection and sent nothing (a blackhole). The mark is the address's,
// for every host on it, and outlives the answers that name it:
// dead_address_s, doubled each time the address fails again soon after
// its mark ended (up to dead_address_max_s), forgotten once it has gone
// unmarked as long as it was marked. So a host whose first address is
// down costs one failed connection, not one per TTL, and the hosts that
// share that address cost none. A host whose every address is marked
// gets the one whose mark ends first.
// Families (ipv6): kAuto (the default) asks A and AAAA together when this
// machine has a route to the IPv6 internet (a UDP connect() to a global
// address, which sends nothing), else A first and AAAA only for a name
// without an A record; kOn asks both always; kOff asks A only. With both,
// the addresses come in c-ares's order (RFC 6724, as getaddrinfo sorts):
// a dead one of either family is moved past as above.
//
// Thread-safe. Lookup never blocks on the network.
#ifndef CRAWLER_RESOLVER_H_
#define CRAWLER_RESOLVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "crawler/config.h"

namespace crawler::engine {

enum class Ipv6 : uint8_t { kAuto, kOn, kOff };

struct ResolverOptions {
  // "ADDRESS" or "ADDRESS:PORT" ("[V6]:PORT"); empty: /etc/resolv.conf's.
  std::vector<std::string> servers;
  double min_ttl_s = 60;
  double max_ttl_s = 21600;
  double negative_ttl_s = 300;
  // An address marked dead is skipped this long, doubled each time it
  // fails again, up to dead_address_max_s.
  double dead_address_s = 600;
  double dead_address_max_s = 21600;
  double timeout_s = 2;  // the first try's; c-ares doubles it for each further try
  int tries = 2;
  // Lookups sent at once at most; the others wait their turn in order.
  size_t max_in_flight = 256;
  Ipv6 ipv6 = Ipv6::kAuto;  // which families are asked (see above)
  // The cache's clock in milliseconds (TTLs, refreshes, expiry); empty:
  // steady_clock. Tests step one by hand, so no sleep decides an outcome.
  std::function<int64_t()> now_ms = nullptr;
};

// The figures stats.json, the report and /metrics carry.
struct DnsFigures {
  uint64_t queries = 0;         // lookups sent (refreshes included)
  uint64_t hits = 0;            // Lookup answered from the cache
  uint64_t misses = 0;          // Lookup that had to start a lookup (and wait)
  uint64_t refreshes = 0;       // lookups sent ahead of an entry's expiry
  uint64_t not_found = 0;       // answers: NXDOMAIN or no address record
  uint64_t failed = 0;          // SERVFAIL, REFUSED, malformed, refused connection
  uint64_t timeouts = 0;        // no answer after every try
  uint64_t dead_addresses = 0;  // MarkDead that left the host another address
  uint64_t entries = 0;         // in the cache now
  uint64_t memory_bytes = 0;    // heap the cache and queue hold (c-ares's own not)
  double latency_p50_ms = 0, latency_p99_ms = 0;  // of answered lookups
};

class Resolver {
 public:
  // The crawl's resolver, as the [fetch] keys say; none (null) with
  // fetch.proxy set (the proxy resolves).
  static Result<std::unique_ptr<Resolver>> ForFetch(const FetchConfig& fetch);
  // Errors: a bad server address, or c-ares failing to start.
  static Result<std::unique_ptr<Resolver>> Create(const ResolverOptions& options);
  ~Resolver();
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  enum class Kind : uint8_t {
    kPending,   // a lookup is under way: ask again later
    kAddress,   // `address`: numeric, IPv6 without brackets
    kNotFound,  // the name does not exist (final)
    kFailed,    // the lookup failed (transient)
  };
  struct Answer {
    Kind kind = Kind::kPending;
    std::string address;
    std::string error;  // kNotFound, kFailed: what happened, for the fetch log
  };
  // `host` as in a URL, lowercase, without port or brackets. Starts a lookup
  // when the cache has nothing valid (a miss). `count`: an answer from the
  // cache counts as a hit (false: a caller asking again about a lookup it
  // waits for).
  Answer Lookup(std::string_view host, bool count = true);
  // Drops `host`'s entry (unless a lookup of it is under way): its next
  // Lookup asks again. For an address that answered 421 Misdirected Request
  // (the host is no longer served there).
  void Forget(std::string_view host);
  // `address` did not answer a fetch of `host`: Lookup skips it, for
  // every host, while it is marked (see above). Returns true iff `host`
  // has another address not marked dead (false: none left, or no such
  // entry; the failure is the host's).
  bool MarkDead(std::string_view host, std::string_view address);
  // False once two different names failed (timeout, SERVFAIL, REFUSED, no
  // server) with no lookup answered (an address, or NXDOMAIN) since: the
  // resolver, or the network to it, is down, not a name, and the crawl
  // defers such hosts (fetch.dns_retry_s) instead of spending their
  // retries. While it is false, a failure also asks the last name answered
  // again (at most once a second): its answer ends the outage, so two lame
  // names at a quiet moment do not pass for one for long.
  bool Healthy() const;
  // Grows each time a lookup ends: a caller holding kPending answers asks
  // again only when it has changed.
  uint64_t generation() const;
  // Whether lookups ask A and AAAA together (ipv6, and for kAuto the route).
  bool BothFamilies() const;
  // Whether this machine has a route to the IPv6 internet.
  static bool Ipv6Routed();
  DnsFigures Figures() const;

 private:
  struct Impl;
  explicit Resolver(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace crawler::engine

#endif  // CRAWLER_RESOLVER_H_
