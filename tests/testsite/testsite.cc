// crawler-testsite: serves the synthetic web of site.h on 127.0.0.1, or
// prints its ground truth.
//
//   crawler-testsite --pages N --hosts H [--port P] [--seed S] [--log FILE]
//                    [--slow-ms MS] [--delay-ms MS] [--huge-bytes B] [--crawl-delay S]
//                    [--vhosts DOMAIN] [--fail-first N [--fail-hang-ms MS] [--fail-pages
//                    K]]
//                    [--robots-fail-first N] [--down-after N --down-ms MS]
//                    [--change-mean-s M [--epoch UNIX_SECONDS]]
//   crawler-testsite ... --truth [--max-depth D] [--max-redirects R]
//   crawler-testsite ... --seeds          (prints every host's root URL)
//   crawler-testsite ... --resolve        (virtual hosts: "NAME:P:127.0.0.1"
//                                          lines, for the crawler's fetch.resolve)
//
// Serving: host h listens on P + h (P = 0: the first run of H free consecutive
// ports from 20000 up). With --vhosts DOMAIN all hosts share port P and the
// Host header picks one: host h is h<h>.DOMAIN:P (an unknown Host gets 404).
// When all listen it prints "listening P H MODE" on stdout (MODE: "ports" or
// the domain).
// HTTP/1.1 with keep-alive (requests parsed and responses written by
// Boost.Beast: http_connection.h), one thread per connection, pages generated
// from memory on demand. --log FILE gets one line per request:
//   <start_us> <reply_us> <end_us> <host:port> <status> <path>
// (CLOCK_MONOTONIC microseconds at the request's arrival, when the response
// began to be written (no response: = end_us) and when it was written),
// which the tests use to count fetches per URL, measure the intervals between
// requests to one host and the transfers open at once.
// --fail-first N: the first N requests of every URL but robots.txt fail,
// each URL in one way (by a hash of its host and path): 503; 429 with
// Retry-After: 1; a reset (the connection closed with RST, no response); a
// hang of --fail-hang-ms (default 3000) then a close with no response (the
// crawler's timeout). The truth set is unchanged: a crawler that retries
// fetches it all. Such failures are logged with status 503, 429 or 0.
// --fail-pages K (with --fail-first N): only pages /p/I.html with I % K == 1
// fail, each with a 503 (a page that is down for its first N requests, then
// back): the truth set is unchanged, but a crawler that gives a page up
// before then fetches it only if it admits it again when linked again.
// --robots-fail-first N: the first N requests of every host's robots.txt
// answer 503 (the truth set is unchanged for a crawler that fetches it
// again; one that gives up first treats the host as fully disallowed).
// --down-after N --down-ms MS: once N pages of host 0 have been served, host
// 0's port (with --vhosts, the one port) stops listening for MS ms and its
// open connections are closed: connections are refused (a host that is
// down), then it listens again. Once per run; the truth set is unchanged.
// --change-mean-s M: HTML pages change over time (site.h, "Validators and
// change"), from the site's time 0: --epoch UNIX_SECONDS, or the start;
// --change-model log-uniform|cho how the pages' rates spread. With or
// without it, every 200 and 304 carries ETag, Last-Modified and Date (as
// nginx sends them) and conditional requests are answered 304 (logged as
// 304).
// SIGTERM/SIGINT: stop, flush the log, exit 0.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <thread>

#include "gzip.h"
#include "http_connection.h"
#include "server_parts.h"
#include "site.h"

namespace {

using crawler::testsite::Page;
using crawler::testsite::Site;
using crawler::testsite::SiteOptions;

std::atomic<bool> g_stop{false};
extern "C" void OnSignal(int) { g_stop = true; }

using crawler::testing::Gzip;
using crawler::testing::HttpConnection;
using crawler::testing::HttpRequest;

// Seconds since the Unix epoch.
double NowUnix() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A socket bound to 127.0.0.1:port, not listening (connections to it are
// refused, and no one else can take the port), or -1.
int Bind(uint16_t port) { return crawler::testsite::BindLoopback(SOCK_STREAM, port); }

int Listen(uint16_t port) {
  int fd = Bind(port);
  if (fd >= 0 && ::listen(fd, 512) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Listens on `hosts` consecutive ports from *base (0: the first free run from
// 20000 up). Returns the sockets, or none.
std::vector<int> BindPorts(uint32_t hosts, uint16_t* base) {
  for (uint32_t start = *base != 0 ? *base : 20000; start + hosts < 65000; ++start) {
    std::vector<int> fds;
    for (uint32_t h = 0; h < hosts; ++h) {
      int fd = Listen(static_cast<uint16_t>(start + h));
      if (fd < 0) break;
      fds.push_back(fd);
    }
    if (fds.size() == hosts) {
      *base = static_cast<uint16_t>(start);
      return fds;
    }
    for (int fd : fds) ::close(fd);
    if (*base != 0) break;  // an explicit port must be free
  }
  return {};
}

// How the server misbehaves, and its clock (the flags in the header).
struct ServerOptions {
  // Injected failures (--fail-first).
  uint32_t fail_first = 0;
  uint32_t fail_hang_ms = 3000;
  uint32_t robots_fail_first = 0;
  uint32_t fail_pages = 0;  // --fail-pages K: only pages I % K == 1 fail (503)
  // Host 0 down for a while (--down-after, --down-ms).
  uint32_t down_after = 0, down_ms = 0;
  // The site's time 0, in seconds since the Unix epoch (--epoch; 0: now).
  double epoch_unix = 0;
};

class Server : public ServerOptions {
 public:
  Server(const Site& site, std::FILE* log, std::vector<int> listen_fds, uint16_t base)
      : site_(site), log_(log), listen_fds_(std::move(listen_fds)), base_(base) {}

  void Run() {
    std::vector<std::thread> acceptors;
    for (uint32_t h = 0; h < listen_fds_.size(); ++h) {
      acceptors.emplace_back([this, h] { Accept(h); });
    }
    for (auto& t : acceptors) t.join();
    // Connection threads are detached (a long crawl makes tens of
    // thousands): wake them, then wait for the last to end.
    connections_.StopAll();
  }

 private:
  void Accept(uint32_t h) {
    while (!g_stop) {
      if (h == 0 && down_after > 0 && !went_down_ && host0_pages_.load() >= down_after &&
          !GoDown())
        return;
      pollfd p{listen_fds_[h], POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      int fd = ::accept(listen_fds_[h], nullptr, nullptr);
      if (fd < 0) continue;
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      connections_.Start(fd, h, [this, h](int conn) { Serve(conn, h); });
    }
    ::close(listen_fds_[h]);
  }

  // Host 0's port: no listener for down_ms, its connections closed, then a
  // listener again. The port stays bound meanwhile (refusing connections),
  // and without SO_REUSEADDR: Linux lets sockets that all set it share a
  // port none listens on, so another test's testsite looking for free ports
  // bound and listened on it during the outage, and this one could not
  // listen again (a Release ctest, 2026-11-28: "cannot listen on port 20001
  // again", 2 pages lost). Bound with it (its closed connections' TIME_WAITs
  // would refuse a bind without), cleared until the listen. False: the port
  // was taken all the same (between the close and the bind).
  bool GoDown() {
    went_down_ = true;
    ::close(listen_fds_[0]);
    listen_fds_[0] = Bind(base_);
    int reuse = 0;
    if (listen_fds_[0] >= 0)
      ::setsockopt(listen_fds_[0], SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof(reuse));
    connections_.Shutdown(0);
    std::fprintf(stderr, "crawler-testsite: port %u down for %u ms after %u pages\n",
                 static_cast<unsigned>(base_), down_ms, host0_pages_.load());
    for (uint32_t waited = 0; waited < down_ms && !g_stop; waited += 10) ::usleep(10000);
    reuse = 1;
    if (listen_fds_[0] >= 0)
      ::setsockopt(listen_fds_[0], SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof(reuse));
    if (listen_fds_[0] >= 0 && ::listen(listen_fds_[0], 512) != 0) {
      ::close(listen_fds_[0]);
      listen_fds_[0] = -1;
    }
    if (listen_fds_[0] < 0) {
      std::fprintf(stderr, "crawler-testsite: cannot listen on port %u again\n",
                   static_cast<unsigned>(base_));
      return false;
    }
    std::fprintf(stderr, "crawler-testsite: port %u up again\n",
                 static_cast<unsigned>(base_));
    return true;
  }

  // `listener`: the listening socket's index, host h in port mode.
  void Serve(int fd, uint32_t listener) {
    HttpConnection conn(fd);
    HttpRequest req;
    while (!g_stop && conn.Read(&req)) {
      uint64_t start = HttpConnection::NowUs();
      std::string path = req.target.substr(0, req.target.find_first_of("?#"));
      int status = 0;
      bool ok = false;
      uint32_t h = listener;
      std::string authority;
      bool ours = !site_.virtual_hosts() || site_.HostOf(req.host, &h);
      int failure = ours ? Failure(h, req.target) : -1;
      if (failure >= 0) {
        authority = site_.Authority(h);
        ok = Fail(conn, fd, failure, &status);
      } else if (ours) {
        authority = site_.Authority(h);
        ok = Respond(conn, h, path, req, &status);
        if (h == 0 && path != "/robots.txt") ++host0_pages_;
      } else {
        authority =
            req.host.empty() || req.host.find(' ') != std::string::npos ? "-" : req.host;
        ok = NoSuchHost(conn, &status);
      }
      uint64_t end = HttpConnection::NowUs();
      Log(start, conn.reply_us() != 0 ? conn.reply_us() : end, end, authority, status,
          req.target);
      if (!ok || !req.keep_alive) return;
    }
  }

  // The way this request fails (0..3), or -1: it is served.
  int Failure(uint32_t h, const std::string& target) {
    const bool robots = target == "/robots.txt";
    if (robots ? robots_fail_first == 0 : fail_first == 0) return -1;
    uint32_t page = 0;
    if (!robots && fail_pages > 0 &&
        (std::sscanf(target.c_str(), "/p/%u.html", &page) != 1 || page % fail_pages != 1))
      return -1;
    std::string key = site_.Authority(h) + target;
    {
      std::lock_guard<std::mutex> lock(fail_mu_);
      if (++attempts_[key] > (robots ? robots_fail_first : fail_first)) return -1;
    }
    if (robots || fail_pages > 0) return 0;  // 503
    uint32_t hash = 2166136261u;             // FNV-1a: the same kind for a URL every run
    for (unsigned char c : key) hash = (hash ^ c) * 16777619u;
    return static_cast<int>(hash % 4);
  }

  // Writes the failure; false: the connection is to be closed.
  bool Fail(HttpConnection& conn, int fd, int kind, int* status) {
    namespace http = boost::beast::http;
    if (kind == 0 || kind == 1) {
      http::response<http::string_body> res{
          kind == 0 ? http::status::service_unavailable : http::status::too_many_requests,
          11};
      res.set(http::field::content_type, "text/plain");
      if (kind == 1) res.set(http::field::retry_after, "1");
      res.body() = "try again later\n";
      *status = kind == 0 ? 503 : 429;
      return conn.Write(res);
    }
    *status = 0;
    if (kind == 3) {
      for (uint32_t waited = 0; waited < fail_hang_ms && !g_stop; waited += 10)
        ::usleep(10000);
    }
    linger l{1, 0};  // close with RST
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    return false;
  }

  static bool NoSuchHost(HttpConnection& conn, int* status) {
    namespace http = boost::beast::http;
    http::response<http::string_body> res{http::status::not_found, 11};
    res.set(http::field::content_type, "text/plain");
    res.body() = "no such virtual host\n";
    *status = 404;
    return conn.Write(res);
  }

  // An IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), and back (-1: none).
  static std::string HttpDate(time_t t) {
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char buf[64];
    std::strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    return buf;
  }
  static time_t ParseHttpDate(const std::string& text) {
    std::tm tm{};
    const char* end = ::strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    return end != nullptr && *end == '\0' ? ::timegm(&tm) : -1;
  }
  // RFC 9110 13.1: If-None-Match when sent (a list, or "*"; weak
  // comparison), else If-Modified-Since.
  static bool NotModified(const HttpRequest& req, const std::string& etag,
                          time_t modified) {
    if (!req.if_none_match.empty()) {
      if (req.if_none_match.find('*') != std::string::npos) return true;
      for (size_t at = 0; at < req.if_none_match.size();) {
        size_t comma = req.if_none_match.find(',', at);
        if (comma == std::string::npos) comma = req.if_none_match.size();
        std::string tag = req.if_none_match.substr(at, comma - at);
        tag.erase(0, tag.find_first_not_of(" \t"));
        tag.erase(tag.find_last_not_of(" \t") + 1);
        if (tag.rfind("W/", 0) == 0) tag.erase(0, 2);
        if (tag == etag) return true;
        at = comma + 1;
      }
      return false;
    }
    const time_t since = ParseHttpDate(req.if_modified_since);
    return since >= 0 && modified <= since;
  }

  bool Respond(HttpConnection& conn, uint32_t h, const std::string& path,
               const HttpRequest& req, int* status) {
    namespace http = boost::beast::http;
    const bool accept_gzip = req.accept_gzip;
    Page p = site_.Serve(h, path, NowUnix() - epoch_unix);
    *status = p.status;
    if (p.malformed) {
      *status = 0;
      conn.WriteRaw("THIS IS NOT HTTP\r\n\r\n<html>");
      return false;
    }
    if (site_.options().delay_ms > 0) ::usleep(site_.options().delay_ms * 1000);
    if (p.slow) {
      for (uint32_t waited = 0; waited < site_.options().slow_ms && !g_stop;
           waited += 10) {
        ::usleep(10000);
      }
    }
    if (p.huge) {
      http::response<http::empty_body> head{static_cast<http::status>(p.status), 11};
      head.set(http::field::content_type, p.content_type);
      if (!conn.WriteHead(head, site_.options().huge_bytes)) return false;
      std::string block(65536, 'x');
      for (uint64_t sent = 0; sent < site_.options().huge_bytes; sent += block.size()) {
        size_t n = static_cast<size_t>(
            std::min<uint64_t>(block.size(), site_.options().huge_bytes - sent));
        if (!conn.WriteRaw(std::string_view(block).substr(0, n))) return false;
      }
      return true;
    }
    const time_t modified = static_cast<time_t>(epoch_unix + p.modified_s);
    if (p.status == 200 && NotModified(req, p.etag, modified)) {
      http::response<http::string_body> res{http::status::not_modified, 11};
      res.set(http::field::etag, p.etag);
      res.set(http::field::last_modified, HttpDate(modified));
      res.set(http::field::date, HttpDate(static_cast<time_t>(NowUnix())));
      *status = 304;
      return conn.Write(res);
    }
    http::response<http::string_body> res{static_cast<http::status>(p.status), 11};
    res.set(http::field::content_type, p.content_type);
    if (!p.location.empty()) res.set(http::field::location, p.location);
    if (p.status == 200) {
      res.set(http::field::etag, p.etag);
      res.set(http::field::last_modified, HttpDate(modified));
      res.set(http::field::date, HttpDate(static_cast<time_t>(NowUnix())));
    }
    res.body() = p.body;
    if (p.gzip_ok && accept_gzip) {
      res.body() = Gzip(p.body);
      res.set(http::field::content_encoding, "gzip");
    }
    return conn.Write(res);
  }

  void Log(uint64_t start, uint64_t reply, uint64_t end, const std::string& authority,
           int status, const std::string& target) {
    if (log_ == nullptr) return;
    std::lock_guard<std::mutex> lock(log_mu_);
    std::fprintf(log_, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %s %d %s\n", start, reply,
                 end, authority.c_str(), status, target.c_str());
    std::fflush(log_);
  }

  const Site& site_;
  std::FILE* log_;
  std::mutex fail_mu_;
  std::map<std::string, uint32_t> attempts_;  // requests so far, by URL (--fail-first)
  std::mutex log_mu_;
  std::vector<int> listen_fds_;
  const uint16_t base_;
  std::atomic<uint32_t> host0_pages_{0};
  bool went_down_ = false;                            // host 0's acceptor's
  crawler::testsite::ConnectionThreads connections_;  // tagged by listener
};

}  // namespace

// --truth, --seeds or --resolve: what a site of options `o` holds, printed;
// the exit code.
static int PrintSite(const SiteOptions& o, bool seeds, bool resolve) {
  if (o.port == 0) {
    std::fprintf(stderr,
                 "crawler-testsite: --truth, --seeds and --resolve need --port\n");
    return 2;
  }
  Site site(o);
  if (resolve) {
    for (uint32_t h = 0; h < o.hosts && site.virtual_hosts(); ++h)
      std::printf("%s:127.0.0.1\n", site.Authority(h).c_str());
  } else if (seeds) {
    for (uint32_t h = 0; h < o.hosts; ++h) std::printf("%s/\n", site.Origin(h).c_str());
  } else {
    for (const std::string& url : site.Truth()) std::printf("%s\n", url.c_str());
  }
  return 0;
}

// The options that shape the web (beside --pages, --hosts and --seed).
void AddShapeOptions(CLI::App& app, SiteOptions& o) {
  app.add_option("--slow-ms", o.slow_ms, "delay of /slow");
  app.add_option("--delay-ms", o.delay_ms, "delay of every response (latency-bound web)");
  app.add_option("--huge-bytes", o.huge_bytes, "body size of /huge");
  app.add_option("--crawl-delay", o.crawl_delay_s, "Crawl-delay of hosts 0, 4, 8, ...");
  app.add_option("--orphans", o.orphans,
                 "pages per host reachable only from its sitemaps (0: no sitemaps)");
  app.add_flag("--sparse", o.sparse, "page i of host h links to page i+1 of h+1 only");
  app.add_flag(
      "--assets", o.assets,
      "pages load /static/ requisites (stylesheets that @import, images, fonts); "
      "truth: a crawl with include_assets");
  app.add_option("--assets-host", o.assets_host,
                 "with --assets: every page loads them from this host");
  app.add_option("--asset-bytes", o.asset_bytes,
                 "with --assets: each stylesheet, image and font padded to about this "
                 "many bytes");
  app.add_option(
         "--page-bytes", o.page_bytes,
         "HTML pages' text about this many bytes on average (0: 5,000 to 60,000); "
         "the last one given counts")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_flag("--asset-query", o.asset_query,
               "with --assets: page i loads its requisites as ...?v=i (one payload "
               "under many URLs)");
  app.add_option("--change-mean-s", o.change_mean_s,
                 "HTML pages change, each at its own rate: this mean interval (s)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--change-model", o.change_model,
                 "with --change-mean-s: each page's rate log-uniform in [1/8, 8] / M "
                 "(log-uniform), or 20% at 8 / M, half never, the rest log-uniform "
                 "(cho: shaped like Cho and Garcia-Molina's measured web)")
      ->check(CLI::IsMember({"log-uniform", "cho"}));
}

// The options of the server's failures and clock.
void AddServerOptions(CLI::App& app, ServerOptions& o) {
  app.add_option("--fail-first", o.fail_first,
                 "the first N requests of every URL but robots.txt fail");
  app.add_option("--fail-hang-ms", o.fail_hang_ms, "how long a hanging failure hangs");
  app.add_option("--fail-pages", o.fail_pages,
                 "with --fail-first: only pages /p/I.html with I % K == 1 fail (503)");
  app.add_option("--robots-fail-first", o.robots_fail_first,
                 "the first N requests of every robots.txt answer 503");
  app.add_option("--down-after", o.down_after,
                 "host 0 goes down once this many of its pages are served");
  app.add_option("--down-ms", o.down_ms, "... for this long (connections refused)");
  app.add_option("--epoch", o.epoch_unix,
                 "the site's time 0, Unix seconds (default: now); pages change from it");
}

// --web: the synthetic internet (web_main.cc); --js: a site whose pages
// need a browser (js_main.cc).
int WebMain(int argc, char** argv);
int JsMain(int argc, char** argv);

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--web") == 0) return WebMain(argc, argv);
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--js") == 0) return JsMain(argc, argv);
  CLI::App app{
      "crawler-testsite: a deterministic synthetic web on 127.0.0.1 (see "
      "tests/testsite/site.h)"};
  SiteOptions o;
  std::string log_path;
  bool truth = false, seeds = false, resolve = false;
  app.add_option("--pages", o.pages, "pages over all hosts")
      ->check(CLI::Range(1u, 10'000'000u));
  app.add_option("--hosts", o.hosts, "hosts, on consecutive ports")
      ->check(CLI::Range(1u, 1000u));
  app.add_option("--port", o.port, "first port (0: find free ports)");
  app.add_option("--seed", o.seed, "generator seed");
  app.add_option("--log", log_path, "request log file");
  AddShapeOptions(app, o);
  app.add_option("--max-depth", o.max_depth, "truth: the crawl's max_depth");
  app.add_option("--max-redirects", o.max_redirects, "truth: the crawl's max_redirects");
  app.add_flag("--truth", truth, "print the URLs a correct crawl fetches, and exit");
  app.add_option("--vhosts", o.vhost_domain,
                 "virtual hosts h<N>.DOMAIN on one port, chosen by the Host header");
  ServerOptions server_options;
  AddServerOptions(app, server_options);
  app.add_flag("--seeds", seeds, "print every host's root URL, and exit");
  app.add_flag(
      "--resolve", resolve,
      "virtual hosts: print NAME:PORT:127.0.0.1 lines (fetch.resolve), and exit");
  CLI11_PARSE(app, argc, argv);

  if (truth || seeds || resolve) return PrintSite(o, seeds, resolve);

  std::FILE* log = nullptr;
  if (!crawler::testsite::OpenLog(log_path, &log)) return 2;
  uint16_t base = o.port;
  uint32_t ports = o.vhost_domain.empty() ? o.hosts : 1;
  std::vector<int> fds = BindPorts(ports, &base);
  if (fds.empty()) {
    std::fprintf(stderr,
                 "crawler-testsite: cannot listen on %u consecutive ports from %u\n",
                 ports, static_cast<unsigned>(o.port));
    return 1;
  }
  o.port = base;
  Site site(o);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);
  Server server(site, log, std::move(fds), base);
  static_cast<ServerOptions&>(server) = server_options;
  if (server.epoch_unix <= 0) server.epoch_unix = std::floor(NowUnix());
  std::printf("listening %u %u %s\n", static_cast<unsigned>(base), o.hosts,
              o.vhost_domain.empty() ? "ports" : o.vhost_domain.c_str());
  std::fflush(stdout);
  server.Run();
  if (log != nullptr) std::fclose(log);
  return 0;
}
