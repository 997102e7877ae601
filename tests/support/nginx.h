// Debian's nginx in the foreground on 127.0.0.1, for the tests that need a
// real web server other than our testsite: TLS and HTTP/2 (transport_test),
// a static root with Range requests (replay_test: ReplayWeb.page reads a
// WACZ so). Every path it writes (pid, logs, temp files) is under `dir`;
// the destructor stops it with SIGTERM and reaps it.
#ifndef CRAWLER_TESTS_NGINX_H_
#define CRAWLER_TESTS_NGINX_H_

#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "crawl_output.h"
#include "loopback.h"
#include "run_command.h"

namespace crawler::testing {

struct NginxSite {
  std::string root = "";          // the directory served
  std::string listen_flags = "";  // after the address: "ssl http2", or ""
  std::string server_extra = "";  // more lines in server {} (certificates)
  std::string types = "";         // a types {} block's body, or "" for nginx's none
  std::string scheme = "http";
};

class Nginx {
 public:
  Nginx(const std::string& dir, unsigned port, const NginxSite& site)
      : port_(port), scheme_(site.scheme) {
    std::filesystem::create_directories(dir + "/tmp");
    std::ofstream conf(dir + "/nginx.conf");
    // One process, no master and workers: the test's child (Spawn), killed
    // with it however the test ends.
    conf << "master_process off;\ndaemon off;\npid " << dir << "/nginx.pid;\n"
         << "error_log " << dir << "/error.log;\nevents { worker_connections 64; }\n"
         << "http {\n  access_log " << dir << "/access.log;\n";
    if (!site.types.empty()) conf << "  types { " << site.types << " }\n";
    for (const char* t : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"})
      conf << "  " << t << "_temp_path " << dir << "/tmp;\n";
    conf << "  server {\n    listen 127.0.0.1:" << port
         << (site.listen_flags.empty() ? "" : " " + site.listen_flags) << ";\n"
         << site.server_extra << "    root " << site.root << ";\n  }\n}\n";
    conf.close();
    pid_ = Spawn("/usr/sbin/nginx -p " + dir + " -c " + dir + "/nginx.conf",
                 dir + "/nginx.out");
    // Up to 5 s to listen; then the test fails, showing nginx's output.
    for (int i = 0; i < 500; ++i) {
      int fd = ConnectLoopback(port_);
      if (fd >= 0) {
        ::close(fd);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pid_, SIGKILL);
    WaitExitFor(pid_, 10);
    FAIL("nginx did not listen on 127.0.0.1:" << port_ << " within 5 s: "
                                              << ReadText(dir + "/nginx.out")
                                              << ReadText(dir + "/error.log"));
  }
  ~Nginx() {
    ::kill(pid_, SIGTERM);
    WaitExitFor(pid_, 10);
  }
  Nginx(const Nginx&) = delete;
  Nginx& operator=(const Nginx&) = delete;

  std::string Origin() const { return scheme_ + "://127.0.0.1:" + std::to_string(port_); }

 private:
  unsigned port_;
  std::string scheme_;
  pid_t pid_ = -1;
};

}  // namespace crawler::testing

#endif  // CRAWLER_TESTS_NGINX_H_
