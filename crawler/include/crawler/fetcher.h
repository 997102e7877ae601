// HTTP fetching with the libcurl multi interface: many transfers at once on
// one thread, connections kept alive and reused, HTTP/2 where offered,
// gzip/br/zstd decoded. Host names are looked up by the crawler's Resolver
// (crawler/resolver.h) when one is given, else by libcurl, whose DNS cache
// every Fetcher of the process shares.
//
// Redirects are NOT followed: a 3xx result carries its Location, and the
// engine sends the target through normalize -> scope -> dedup like any link.
// Limits: connect timeout, total timeout, low-speed abort, and a body size
// cap (the transfer is cut there and the result marked truncated). Every
// outcome, including failures, ends in exactly one callback with a
// FetchResult naming what happened; nothing throws out of a libcurl callback.
//
// Threads: a Fetcher belongs to one thread (libcurl multi handles are not
// thread-safe); run one per worker. The shared DNS cache is locked inside.
#ifndef CRAWLER_FETCHER_H_
#define CRAWLER_FETCHER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "crawler/body.h"

namespace crawler::engine {

class Resolver;  // crawler/resolver.h

struct FetchOptions {
  std::string user_agent = "crawler/0.1";
  double connect_timeout_s = 10;
  double timeout_s = 60;
  uint64_t low_speed_bytes = 1000;
  double low_speed_time_s = 30;
  uint64_t max_body_bytes = 10 * 1024 * 1024;
  // A body past spool_body_bytes goes on in an unlinked file in spool_dir
  // (made if missing; "": bodies stay in RAM), mapped when it ends (body.h).
  uint64_t spool_body_bytes = 256 * 1024;
  std::string spool_dir;
  uint32_t max_connections = 64;  // this Fetcher's open connections at most
  // A safety net: the frontier already hands out at most this many per host
  // and per address. libcurl counts it per bundle, and a bundle is the
  // connect-to address when one is pinned (the resolver's answer, a
  // fetch.resolve entry of one address: every host on an address shares
  // it), else the host name. Time a transfer waits for a free connection
  // counts against timeout_s, so keep these limits at or above what the
  // frontier allows at one address.
  uint32_t max_connections_per_host = 1;
  // "HOST:PORT:ADDRESS[,ADDRESS...]" entries, as curl --resolve: these names
  // connect to these addresses without DNS (Host header and TLS name kept).
  std::vector<std::string> resolve;
  // Looks up the other hosts (not addresses, not fetch.resolve's, not
  // through a proxy) before their transfers start, which wait meanwhile
  // in Run without blocking it; null: libcurl resolves.
  Resolver* resolver = nullptr;
  // TLS: a PEM file of CA certificates to trust instead of the system's
  // (empty: the system's); `insecure` skips certificate and host name checks.
  // Both apply to an https:// proxy's certificate too.
  std::string ca_file;
  bool insecure = false;
  // A proxy URL as libcurl takes it (http://, https://, socks5://,
  // socks5h://HOST:PORT); empty: none (the http_proxy/https_proxy/
  // no_proxy environment variables are ignored either way).
  std::string proxy;
};

enum class FetchError : uint8_t {
  kNone,
  kDns,         // host name did not resolve (NXDOMAIN, no address)
  kDnsFailure,  // the lookup failed: SERVFAIL, no answer (transient)
  kConnect,     // refused / unreachable
  kTimeout,     // connect, total or low-speed limit
  kTooLarge,    // body over max_body_bytes (result is truncated, not failed)
  kProtocol,    // malformed response, bad encoding, connection dropped mid-response
  kTls,         // TLS handshake failed or the certificate was not trusted
  kSpool,       // the body's spool file could not be made or written (transient)
  kOther,
};
const char* FetchErrorName(FetchError e);
// A failure that costs a URL the crawl's end without it being a loss
// (CrawlCounts::lost): none of its answer came (a lookup that failed, not
// NXDOMAIN; a connection refused or timed out), or it could not be kept
// here (spool): a later crawl may well not meet it. A response that is
// not HTTP, broken off mid-body (protocol) or refused TLS is the server's.
inline bool IsLoss(FetchError e) {
  return e == FetchError::kDnsFailure || e == FetchError::kConnect ||
         e == FetchError::kTimeout || e == FetchError::kSpool;
}

struct FetchResult {
  std::string url;
  long status = 0;                  // 0: no HTTP response
  std::string request_head;         // the request as sent (for WARC)
  std::string response_head;        // status line + headers as received
  Body body;                        // decoded (body.h: in RAM, or a mapped file)
  std::string content_type;         // lowercased media type without parameters
  std::string content_type_header;  // the Content-Type header as sent ("": none)
  std::string charset;              // Content-Type charset parameter, if any
  std::string location;             // Location header of a 3xx, as sent
  std::string retry_after;          // Retry-After header (its last value), as sent
  std::string etag;                 // ETag and Last-Modified (validators), as sent
  std::string last_modified;
  std::string date;  // Date header (the server's clock), as sent
  std::string ip;
  bool truncated = false;
  // Given up by Abandon before it ended (nothing else is set): not a result.
  bool abandoned = false;
  // No connection at `ip` (refused, or the connect timed out), and the
  // resolver has another address of the host, which is skipped for it now
  // (Resolver::MarkDead): the fetch may go again at once.
  bool other_address = false;
  // kDnsFailure while the resolver answered no lookup at all lately
  // (Resolver::Healthy): an outage, not the name's own failure.
  bool dns_outage = false;
  FetchError error = FetchError::kNone;
  std::string error_message;  // libcurl's words, when error != kNone
  double seconds = 0;
};

class Fetcher {
 public:
  static Result<std::unique_ptr<Fetcher>> Create(const FetchOptions& options);
  ~Fetcher();
  Fetcher(const Fetcher&) = delete;
  Fetcher& operator=(const Fetcher&) = delete;

  using Callback = std::function<void(FetchResult&&)>;
  // Starts a GET of `url`; `done` is called from Run() when it ends.
  void Add(const std::string& url, Callback done);
  // The same with extra request headers ("Name: value" lines; a revisit's
  // If-None-Match and If-Modified-Since).
  void Add(const std::string& url, const std::vector<std::string>& headers,
           Callback done);
  // Drives transfers, waiting at most `max_wait` for activity; calls the
  // callbacks of finished transfers. Returns the number still running.
  size_t Run(std::chrono::milliseconds max_wait);
  // Where a fetch of `url` would connect, asked before it starts: the URL's
  // own address, fetch.resolve's (its first) for a name it routes, or
  // options.resolver's answer for its name (nullopt while the lookup,
  // started here, runs; "" if it failed); "" when not known here (a proxy,
  // no resolver).
  std::optional<std::string> AddressFor(const std::string& url);
  size_t Running() const;
  // Ends at once the transfers whose URL `pred` picks: each `done` is called
  // (here, before this returns) with a result marked abandoned. Returns how
  // many. (A cluster node whose lease lapsed: placement.h, Lapsed.)
  size_t Abandon(const std::function<bool(const std::string& url)>& pred);

 private:
  struct Impl;
  explicit Fetcher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace crawler::engine

#endif  // CRAWLER_FETCHER_H_
