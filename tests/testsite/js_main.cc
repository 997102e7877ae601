// crawler-testsite --js: serves the JavaScript site of js_site.h on
// 127.0.0.1, or prints its truth.
//
//   crawler-testsite --js [--port P] [--log FILE]
//   crawler-testsite --js --port P --truth [--static] | --seeds
//
// Serving: one host on port P (0: the first free port from 20000 up); when
// it listens it prints "listening P 1 ports" (as the site mode's one host). --log FILE
// gets one line per request, as the site mode's:
//   <start_us> <reply_us> <end_us> <host:port> <status> <target>
// --truth prints every URL a rendering crawl must archive; with --static
// those a crawl without a browser can (js_site.h). --seeds prints the root.
// SIGTERM/SIGINT: stop, flush the log, exit 0.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "http_connection.h"
#include "js_site.h"
#include "server_parts.h"

namespace {

using crawler::testing::HttpConnection;
using crawler::testing::HttpRequest;
using crawler::testsite::JsPage;
using crawler::testsite::JsSite;

std::atomic<bool> g_js_stop{false};
extern "C" void OnJsSignal(int) { g_js_stop = true; }

class JsServer {
 public:
  JsServer(const JsSite& site, std::FILE* log, std::string authority)
      : site_(site), log_(log), authority_(std::move(authority)) {}

  void Run(int listen_fd) {
    while (!g_js_stop) {
      pollfd p{listen_fd, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const int fd = ::accept(listen_fd, nullptr, nullptr);
      if (fd < 0) continue;
      connections_.Start(fd, 0, [this](int conn) { Serve(conn); });
    }
    ::close(listen_fd);
    connections_.StopAll();
  }

 private:
  void Serve(int fd) {
    namespace http = boost::beast::http;
    HttpConnection conn(fd);
    HttpRequest req;
    while (!g_js_stop && conn.Read(&req)) {
      const uint64_t start = HttpConnection::NowUs();
      const std::string path = req.target.substr(0, req.target.find_first_of("?#"));
      JsPage page = site_.Get(path);
      http::response<http::string_body> res{static_cast<http::status>(page.status), 11};
      res.set(http::field::content_type, page.content_type);
      res.body() = std::move(page.body);
      const bool ok = conn.Write(res);
      const uint64_t end = HttpConnection::NowUs();
      if (log_ != nullptr) {
        std::lock_guard<std::mutex> lock(log_mu_);
        std::fprintf(log_, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %s %d %s\n", start,
                     conn.reply_us() != 0 ? conn.reply_us() : end, end,
                     authority_.c_str(), page.status, req.target.c_str());
        std::fflush(log_);
      }
      if (!ok || !req.keep_alive) return;
    }
  }

  const JsSite& site_;
  std::FILE* log_;
  const std::string authority_;
  std::mutex log_mu_;
  crawler::testsite::ConnectionThreads connections_;
};

}  // namespace

int JsMain(int argc, char** argv) {
  CLI::App app{"crawler-testsite --js: a site whose pages need a browser (js_site.h)"};
  bool js = false, truth = false, only_static = false, seeds = false;
  unsigned port = 0;
  std::string log_path;
  app.add_flag("--js", js, "the JavaScript site");
  app.add_option("--port", port, "its port (0: the first free one from 20000 up)")
      ->check(CLI::Range(0u, 65535u));
  app.add_option("--log", log_path, "request log file");
  uint32_t page_bytes = 0;  // the test harness passes it to every mode
  app.add_option("--page-bytes", page_bytes, "ignored: the JS site's pages are fixed");
  app.add_flag("--truth", truth, "print the URLs a rendering crawl archives, and exit");
  app.add_flag("--static", only_static,
               "with --truth: those a crawl without a browser does");
  app.add_flag("--seeds", seeds, "print the site's root URL, and exit");
  CLI11_PARSE(app, argc, argv);
  JsSite site;
  if (truth || seeds) {
    if (port == 0) {
      std::fprintf(stderr, "crawler-testsite --js: --truth and --seeds need --port\n");
      return 2;
    }
    const std::string root = "http://127.0.0.1:" + std::to_string(port);
    if (seeds) {
      std::printf("%s/\n", root.c_str());
      return 0;
    }
    for (const std::string& p : site.Truth(!only_static))
      std::printf("%s%s\n", root.c_str(), p.c_str());
    return 0;
  }
  int fd = -1;
  // An explicit port must be free; else the first free one from 20000.
  const unsigned first = port != 0 ? port : 20000, last = port != 0 ? port : 64999;
  for (unsigned p = first; p <= last && fd < 0; ++p) {
    fd = crawler::testsite::BindLoopback(SOCK_STREAM, static_cast<uint16_t>(p));
    if (fd >= 0 && ::listen(fd, 512) != 0) {
      ::close(fd);
      fd = -1;
    }
    if (fd >= 0) port = p;
  }
  if (fd < 0) {
    std::fprintf(stderr, "crawler-testsite --js: cannot listen on port %u\n", port);
    return 1;
  }
  std::FILE* log = nullptr;
  if (!crawler::testsite::OpenLog(log_path, &log)) return 2;
  std::signal(SIGINT, OnJsSignal);
  std::signal(SIGTERM, OnJsSignal);
  std::signal(SIGPIPE, SIG_IGN);
  std::printf("listening %u 1 ports\n", port);
  std::fflush(stdout);
  JsServer server(site, log, "127.0.0.1:" + std::to_string(port));
  server.Run(fd);
  if (log != nullptr) std::fclose(log);
  return 0;
}
