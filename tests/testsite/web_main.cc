// crawler-testsite --web: serves the synthetic internet of web.h, with its
// DNS (dns_server.h), or prints its ground truth.
//
//   crawler-testsite --web [--hosts N] [--addresses A] [--seed S] [--port P]
//                    [--dns-port D] [--log FILE] [--page-bytes B]
//                    [--dns-delay-ms M] [--reply-delay-ms M] [...]
//   crawler-testsite --web ... --truth | --seeds | --resolve | --describe
//
// Serving: every address 127.1.x.y of the web listens on port P (0: the
// first port from 20000 up free on all of them), and the Host header picks
// the host; a host asked for at an address that is not its own (now) gets
// 421 Misdirected Request, an unknown one 404. The DNS listens on UDP and
// TCP 127.0.0.1:D (0: a free port). When all listen it prints
// "listening P N web:D" (N: normal hosts).
// --log FILE gets one line per request, as the site mode's, with the
// address the request came to (the accepted socket's local address):
//   <start_us> <reply_us> <end_us> <host:port> <status> <target> <address>
// --truth prints every URL a correct crawl fetches, --seeds every normal
// host's root, --resolve "NAME:P:ADDRESS" for every normal host (the
// crawler's fetch.resolve), --describe the web's shape in figures.
// SIGTERM/SIGINT: stop, flush the log, exit 0.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "dns_server.h"
#include "gzip.h"
#include "http_connection.h"
#include "server_parts.h"
#include "web.h"

namespace {

using crawler::testing::HttpConnection;
using crawler::testing::HttpRequest;
using crawler::testsite::DnsServer;
using crawler::testsite::HostKind;
using crawler::testsite::HostRef;
using crawler::testsite::kCutGzip;
using crawler::testsite::kHugeHeader;
using crawler::testsite::kNoFault;
using crawler::testsite::kResetMidBody;
using crawler::testsite::kShortBody;
using crawler::testsite::kSilent;
using crawler::testsite::kTrickle;
using crawler::testsite::MoveClock;
using crawler::testsite::PageFault;
using crawler::testsite::Web;
using crawler::testsite::WebOptions;
using crawler::testsite::WebPage;

std::atomic<bool> g_web_stop{false};
extern "C" void OnWebSignal(int) { g_web_stop = true; }

// A listening socket on `ip`:`port`, or -1.
int ListenOn(uint32_t ip, uint32_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(ip);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(fd, 512) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Listening sockets on `port` of every address (0: the first port from
// 20000 up that all of them have free), and of the 250 dead addresses
// with WebOptions::dead_first_silent. Empty on failure.
std::vector<int> ListenAll(const Web& web, uint16_t* port) {
  const bool blackholes = web.options().dead_first_silent;
  std::vector<uint32_t> ips;
  for (uint32_t a = 0; a < web.options().addresses; ++a) ips.push_back(Web::AddressIp(a));
  for (uint32_t h = 0; blackholes && h < 250; ++h) ips.push_back(Web::DeadIp(h));
  for (uint32_t p = *port != 0 ? *port : 20000; p < 65000; ++p) {
    std::vector<int> fds;
    for (uint32_t ip : ips) {
      const int fd = ListenOn(ip, p);
      if (fd < 0) break;
      fds.push_back(fd);
    }
    if (fds.size() == ips.size()) {
      *port = static_cast<uint16_t>(p);
      return fds;
    }
    for (int fd : fds) ::close(fd);
    if (*port != 0) break;
  }
  return {};
}

class WebServer {
 public:
  WebServer(const Web& web, std::FILE* log, std::vector<int> listen_fds, MoveClock& move,
            uint32_t reply_delay_ms)
      : web_(web),
        log_(log),
        listen_fds_(std::move(listen_fds)),
        move_(move),
        reply_delay_(std::chrono::milliseconds(reply_delay_ms)) {}

  void Run() {
    int ep = ::epoll_create1(0);
    for (uint32_t a = 0; a < listen_fds_.size(); ++a) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u32 = a;
      ::epoll_ctl(ep, EPOLL_CTL_ADD, listen_fds_[a], &ev);
    }
    std::vector<epoll_event> events(64);
    while (!g_web_stop) {
      int n = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), 100);
      for (int k = 0; k < n; ++k) Accept(listen_fds_[events[k].data.u32]);
    }
    ::close(ep);
    for (int fd : listen_fds_) ::close(fd);
    connections_.StopAll();
  }

 private:
  void Accept(int listener) {
    for (;;) {
      int fd = ::accept4(listener, nullptr, nullptr, 0);
      if (fd < 0) return;
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      connections_.Start(fd, 0, [this](int conn) { Serve(conn); });
    }
  }

  void Serve(int fd) {
    sockaddr_in local{};
    socklen_t len = sizeof(local);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
    const uint32_t ip = ntohl(local.sin_addr.s_addr);
    const int64_t address = web_.AddressIndex(ip);
    if (address < 0 && web_.options().dead_first_silent) {
      // A blackhole (WebOptions::dead_first_silent): nothing is answered.
      for (int s = 0; s < 120 && !g_web_stop; ++s) {
        pollfd p{fd, POLLIN, 0};
        char byte[512];
        if (::poll(&p, 1, 1000) > 0 && ::recv(fd, byte, sizeof(byte), 0) <= 0) return;
      }
      return;
    }
    HttpConnection conn(fd);
    HttpRequest req;
    while (!g_web_stop && conn.Read(&req)) {
      const uint64_t start = HttpConnection::NowUs();
      std::string host = req.host;
      for (char& c : host) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
      std::string name = host.substr(0, host.rfind(':'));
      if (!name.empty() && name.back() == '.') name.pop_back();
      const HostRef ref = web_.Lookup(name);
      const bool served = ref.kind == HostKind::kNormal || ref.kind == HostKind::kTrap ||
                          ref.kind == HostKind::kFarm;
      WebPage page;
      if (!served) {
        page.status = 404;
        page.body = "no such virtual host\n";
      } else if (address < 0 || web_.AddressOf(ref, move_.Elapsed()) != address) {
        page.status = 421;
        page.body = "not served at this address\n";
      } else {
        page = web_.Serve(ref, req.target);
        if (ref.kind == HostKind::kNormal && ref.index == web_.MovedHost() &&
            page.status == 200 && req.target != "/robots.txt")
          move_.OnPageServed();
      }
      // A server's think time: requests at one address overlap as they do
      // on a real one, however slowly the client runs (a sanitizer build).
      if (reply_delay_.count() > 0) std::this_thread::sleep_for(reply_delay_);
      const PageFault fault = page.status == 200 && ref.kind == HostKind::kNormal
                                  ? web_.FaultOf(ref.index, req.target)
                                  : kNoFault;
      if (fault != kNoFault && fault != kHugeHeader && FirstFault(name + req.target)) {
        // Logged with status 0: no whole answer reached the client.
        WriteFault(conn, fd, fault, page.content_type, page.body);
        Log(start, conn.reply_us(), HttpConnection::NowUs(), host, 0, req.target,
            Web::IpText(ip));
        return;
      }
      namespace http = boost::beast::http;
      http::response<http::string_body> res{static_cast<http::status>(page.status), 11};
      res.set(http::field::content_type, page.content_type);
      if (!page.location.empty()) res.set(http::field::location, page.location);
      // 64 KB of header in four fields (Beast holds a field to 64 KB - 1).
      for (int i = 0; fault == kHugeHeader && i < 4; ++i)
        res.set("X-Padding-" + std::to_string(i), std::string(16 * 1024, 'p'));
      if (page.gzip_ok && req.accept_gzip) {
        res.body() = crawler::testing::Gzip(page.body, 1);
        res.set(http::field::content_encoding, "gzip");
      } else {
        res.body() = std::move(page.body);
      }
      const bool ok = conn.Write(res);
      const uint64_t end = HttpConnection::NowUs();
      Log(start, conn.reply_us() != 0 ? conn.reply_us() : end, end,
          host.empty() || host.find(' ') != std::string::npos ? "-" : host, page.status,
          req.target, Web::IpText(ip));
      if (!ok || !req.keep_alive) return;
    }
  }

  // Whether `url`'s fault is still to come (its first request).
  bool FirstFault(const std::string& url) {
    std::lock_guard<std::mutex> lock(faulted_mu_);
    return faulted_.insert(url).second;
  }
  // WebOptions::page_faults: a broken answer; the caller closes. A silent
  // or trickling one lasts until the client gives up (closes), 120 s at most.
  static void WriteFault(HttpConnection& conn, int fd, PageFault fault,
                         const std::string& type, const std::string& body) {
    namespace http = boost::beast::http;
    if (fault == kSilent) {
      for (int s = 0; s < 120; ++s) {
        pollfd p{fd, POLLIN, 0};
        char byte;
        if (::poll(&p, 1, 1000) > 0 && ::recv(fd, &byte, 1, MSG_DONTWAIT) <= 0) return;
      }
      return;
    }
    http::response<http::empty_body> head{http::status::ok, 11};
    head.set(http::field::content_type, type);
    head.keep_alive(false);
    if (fault == kCutGzip) {
      const std::string gz = crawler::testing::Gzip(body, 1);
      head.set(http::field::content_encoding, "gzip");
      if (conn.WriteHead(head, gz.size() / 2)) conn.WriteRaw(gz.substr(0, gz.size() / 2));
      return;
    }
    if (!conn.WriteHead(head, body.size() + (fault == kShortBody ? 1000 : 0))) return;
    if (fault == kTrickle) {
      for (size_t i = 0; i < body.size() && i < 120; ++i) {
        if (!conn.WriteRaw(std::string_view(body).substr(i, 1))) return;
        std::this_thread::sleep_for(std::chrono::seconds(1));
      }
      return;
    }
    conn.WriteRaw(fault == kShortBody
                      ? std::string_view(body)
                      : std::string_view(body).substr(0, body.size() / 2));
    if (fault == kResetMidBody) {
      linger reset{1, 0};  // close() sends RST, not FIN
      ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
    }
  }

  void Log(uint64_t start, uint64_t reply, uint64_t end, const std::string& authority,
           int status, const std::string& target, const std::string& local) {
    if (log_ == nullptr) return;
    std::lock_guard<std::mutex> lock(log_mu_);
    std::fprintf(log_, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %s %d %s %s\n", start, reply,
                 end, authority.c_str(), status, target.c_str(), local.c_str());
    std::fflush(log_);
  }

  const Web& web_;
  std::FILE* log_;
  std::vector<int> listen_fds_;
  MoveClock& move_;
  const std::chrono::milliseconds reply_delay_;
  std::mutex faulted_mu_;
  std::set<std::string> faulted_;  // under faulted_mu_
  std::mutex log_mu_;
  crawler::testsite::ConnectionThreads connections_;
};

// --describe: the shape in figures (the benchmark prints them beside its own).
void Describe(const Web& web) {
  const WebOptions& o = web.options();
  std::vector<uint32_t> per_address(o.addresses), sizes(o.hosts), in_degree(o.hosts);
  uint64_t pages = 0, page_bytes = 0, sampled = 0;
  for (uint32_t h = 0; h < o.hosts; ++h) {
    ++per_address[web.HostAddress(h)];
    sizes[h] = web.Pages(h);
    pages += sizes[h];
    if (h % 97 == 0) {
      page_bytes += web.Serve({HostKind::kNormal, h, 0}, "/").body.size();
      ++sampled;
    }
    for (const auto& [t, page] : web.CrossLinks(h, 0)) ++in_degree[t];
  }
  auto sorted = [](std::vector<uint32_t> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  const std::vector<uint32_t> a = sorted(per_address), s = sorted(sizes),
                              d = sorted(in_degree);
  const auto ones = std::count(a.begin(), a.end(), 1u);
  std::printf("hosts %u in %u registered domains, %" PRIu64 " pages\n", o.hosts,
              web.domains(), pages);
  std::printf("addresses %u: hosts per address median %u, max %u; %ld carry one host\n",
              o.addresses, a[a.size() / 2], a.back(), static_cast<long>(ones));
  std::printf("site size: median %u, p99 %u, max %u pages\n", s[s.size() / 2],
              s[s.size() * 99 / 100], s.back());
  std::printf("in-degree from other roots (3 links each): median %u, max %u\n",
              d[d.size() / 2], d.back());
  std::printf("root page bytes (every 97th host): mean %" PRIu64 "\n",
              sampled > 0 ? page_bytes / sampled : 0);
}

int PrintWeb(const Web& web, bool truth, bool seeds, bool resolve) {
  if (web.options().port == 0) {
    std::fprintf(stderr,
                 "crawler-testsite: --truth, --seeds and --resolve need --port\n");
    return 2;
  }
  if (truth) {
    web.ForEachTruthUrl([](const std::string& url) { std::printf("%s\n", url.c_str()); });
  } else {
    for (uint32_t h = 0; h < web.options().hosts; ++h) {
      if (seeds) std::printf("%s\n", web.Url(h, 0).c_str());
      if (resolve)
        std::printf("%s:%u:%s\n", web.HostName(h).c_str(), web.options().port,
                    Web::IpText(Web::AddressIp(web.HostAddress(h))).c_str());
    }
  }
  return 0;
}

// Every address needs a listening socket, and each connection a descriptor.
void RaiseFileLimit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
}

// The fault switches (web.h, WebOptions: the fault part).
void AddFaultOptions(CLI::App& app, WebOptions& o) {
  app.add_option("--dead-first", o.dead_first,
                 "fault: every Nth host answers a dead address before its own");
  app.add_option("--ipv6-every", o.ipv6_every,
                 "fault: every Nth host also answers AAAA ::1, where nothing listens");
  app.add_flag("--redirect-loop", o.redirect_loop,
               "fault: /loop/N of host h redirects to /loop/N+1 of host h+1, endlessly");
  app.add_flag("--dead-first-silent", o.dead_first_silent,
               "fault: the dead first addresses accept and never answer (blackholes)");
  app.add_option("--dns-outage-at-s", o.dns_outage_at_s,
                 "fault: the DNS drops every query from this second ...");
  app.add_option("--dns-outage-s", o.dns_outage_s, "... for this many seconds");
  app.add_option("--dns-outage-after", o.dns_outage_after,
                 "fault: ... or from the query after this many (0: by time)");
  app.add_flag("--dns-outage-servfail", o.dns_outage_servfail,
               "fault: the outage answers SERVFAIL, not nothing");
  app.add_option("--page-fault-every", o.page_fault_every,
                 "fault: every Nth page gets a --page-fault (its first request)");
  app.add_option("--page-fault")
      ->description(
          "reset (mid-body), short (Content-Length past the body), gzip (cut), "
          "header (64 KB), silent (never answered), trickle (a byte a second); repeat "
          "for more")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(CLI::IsMember({"reset", "short", "gzip", "header", "silent", "trickle"}))
      ->each([&o](const std::string& k) {
        o.page_faults |= k == "reset"     ? kResetMidBody
                         : k == "short"   ? kShortBody
                         : k == "gzip"    ? kCutGzip
                         : k == "silent"  ? kSilent
                         : k == "trickle" ? kTrickle
                                          : kHugeHeader;
      });
}

}  // namespace

int WebMain(int argc, char** argv) {
  CLI::App app{"crawler-testsite --web: a synthetic internet with its own DNS (web.h)"};
  WebOptions o;
  bool web = false, truth = false, seeds = false, resolve = false, describe = false;
  std::string log_path;
  uint16_t dns_port = 0;
  uint32_t dns_delay_ms = 0, reply_delay_ms = 0;
  app.add_flag("--web", web, "serve the synthetic internet");
  app.add_option("--hosts", o.hosts, "normal hosts")->check(CLI::Range(1u, 1'000'000u));
  app.add_option("--addresses", o.addresses, "addresses they share (127.1.x.y)")
      ->check(CLI::Range(1u, Web::kMaxAddresses));
  app.add_option("--address-zipf", o.address_zipf, "exponent of the sharing");
  app.add_option("--seed", o.seed, "generator seed");
  app.add_option("--port", o.port, "the port of every address (0: find one)");
  app.add_option("--dns-port", dns_port, "the DNS's port on 127.0.0.1 (0: find one)");
  app.add_option("--dns-delay-ms", dns_delay_ms, "every DNS answer waits this long");
  app.add_option("--reply-delay-ms", reply_delay_ms, "every HTTP reply waits this long");
  app.add_option("--log", log_path, "request log file");
  app.add_option("--page-bytes", o.page_bytes,
                 "mean page size (the last one given counts)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--max-site-pages", o.max_site_pages, "largest site");
  app.add_option("--site-xmin", o.site_xmin, "Pareto law of site sizes: scale");
  app.add_option("--site-alpha", o.site_alpha, "... and exponent")
      ->check(CLI::Range(1.01, 10.0));
  app.add_option("--farm-domains", o.farm_domains, "registered domains of the spam farm")
      ->check(CLI::Range(1u, 1000u));
  app.add_option("--dead", o.dead,
                 "hosts of each dead kind (NXDOMAIN, SERVFAIL, silent)");
  app.add_option("--move-after-s", o.move_after_s,
                 "host 1 changes address this long after the first DNS question for it");
  app.add_option("--move-after-pages", o.move_after_pages,
                 "host 1 changes address after serving this many pages");
  AddFaultOptions(app, o);
  app.add_flag("--truth", truth, "print the URLs a correct crawl fetches, and exit");
  app.add_flag("--seeds", seeds, "print every normal host's root URL, and exit");
  app.add_flag("--resolve", resolve, "print NAME:PORT:ADDRESS lines, and exit");
  app.add_flag("--describe", describe, "print the web's shape in figures, and exit");
  CLI11_PARSE(app, argc, argv);

  if (describe) {
    Describe(Web(o));
    return 0;
  }
  if (truth || seeds || resolve) return PrintWeb(Web(o), truth, seeds, resolve);

  RaiseFileLimit();
  std::FILE* log = nullptr;
  if (!crawler::testsite::OpenLog(log_path, &log)) return 2;
  std::vector<int> fds = ListenAll(Web(o), &o.port);
  if (fds.empty()) {
    std::fprintf(stderr, "crawler-testsite: cannot listen on one port of %u addresses\n",
                 o.addresses);
    return 1;
  }
  const Web w(o);
  const auto start = std::chrono::steady_clock::now();
  MoveClock move(o);
  DnsServer dns(w, move, start, dns_delay_ms, g_web_stop);
  if (!dns.Listen(&dns_port)) {
    std::fprintf(stderr, "crawler-testsite: cannot listen for DNS on 127.0.0.1:%u\n",
                 static_cast<unsigned>(dns_port));
    return 1;
  }
  std::signal(SIGINT, OnWebSignal);
  std::signal(SIGTERM, OnWebSignal);
  std::signal(SIGPIPE, SIG_IGN);
  std::printf("listening %u %u web:%u\n", static_cast<unsigned>(o.port), o.hosts,
              static_cast<unsigned>(dns_port));
  std::fflush(stdout);
  std::thread dns_thread([&dns] { dns.Run(); });
  WebServer(w, log, std::move(fds), move, reply_delay_ms).Run();
  dns_thread.join();
  if (log != nullptr) std::fclose(log);
  return 0;
}
