// Runs crawler-testsite as a real process for a test: it finds free ports
// itself (--port 0) and reports them on stdout; the destructor stops it with
// SIGTERM and waits, so its request log is complete once the object is gone
// or Stop() has returned.
#ifndef TESTS_SUPPORT_TESTSITE_PROCESS_H_
#define TESTS_SUPPORT_TESTSITE_PROCESS_H_

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "run_command.h"

namespace crawler::testing {

// One line of the testsite's request log.
struct ServedRequest {
  // CLOCK_MONOTONIC: the request read, its answer's first byte about to be
  // written (a client cannot have seen it before), the answer written.
  uint64_t start_us = 0, reply_us = 0, end_us = 0;
  std::string authority;  // "HOST:PORT": one per site host
  int status = 0;
  std::string target;
  std::string local;  // --web: the address the request came to ("" otherwise)
  std::string Url() const { return "http://" + authority + target; }
};

class TestSite {
 public:
  // `args`: --pages, --hosts and any other flags except --port and --log.
  // Pages are 2 to 6 KB of text unless `args` has its own --page-bytes (the
  // last one counts): what a test checks does not grow with a page, while
  // its parse, gzip and WARC record do (34 KB a page by default: at that
  // size, gumbo's parse was 63% of a crawl's CPU; `perf record` on a
  // 21,000-page crawl).
  TestSite(const std::string& args, const std::string& log_path)
      : args_("--page-bytes 4000 " + args), log_(log_path) {
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    pid_ = ForkShell("exec " + std::string(TESTSITE_BINARY) + " --port 0 --log " +
                         log_path + " " + args_,
                     SIGKILL, out[1]);
    ::close(out[1]);
    std::FILE* f = ::fdopen(out[0], "r");
    unsigned port = 0, hosts = 0;
    char mode[256] = {};
    int got = std::fscanf(f, "listening %u %u %255s", &port, &hosts, mode);
    std::fclose(f);
    if (got != 3) {
      Stop();
      throw std::runtime_error("crawler-testsite did not start: " + args);
    }
    port_ = port;
    hosts_ = hosts;
    if (std::string(mode).rfind("web:", 0) == 0)
      dns_port_ = static_cast<unsigned>(std::stoul(mode + 4));
    else if (std::string(mode) != "ports")
      vhost_domain_ = mode;
  }
  ~TestSite() { Stop(); }
  TestSite(const TestSite&) = delete;
  TestSite& operator=(const TestSite&) = delete;

  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  unsigned port() const { return port_; }
  // --web: the DNS's port on 127.0.0.1 (0 otherwise).
  unsigned dns_port() const { return dns_port_; }
  // "HOST:PORT" of site host h (as the testsite's Site::Authority).
  std::string Authority(unsigned h) const {
    if (!vhost_domain_.empty())
      return "h" + std::to_string(h) + "." + vhost_domain_ + ":" + std::to_string(port_);
    return "127.0.0.1:" + std::to_string(port_ + h);
  }
  std::string Origin(unsigned h) const { return "http://" + Authority(h); }
  // Virtual hosts: the fetch.resolve entries that map them to 127.0.0.1.
  std::vector<std::string> Resolve() const { return Ask("--resolve"); }

  // Runs the binary with the same site flags plus `extra` (--truth, --seeds).
  std::vector<std::string> Ask(const std::string& extra) const {
    CommandResult r = RunCommand(std::string(TESTSITE_BINARY) + " --port " +
                                 std::to_string(port_) + " " + args_ + " " + extra);
    if (r.exit_code != 0)
      throw std::runtime_error("crawler-testsite " + extra + ": " + r.output);
    std::vector<std::string> lines;
    std::istringstream in(r.output);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  std::set<std::string> Truth(const std::string& extra = "") const {
    std::vector<std::string> v = Ask("--truth " + extra);
    return {v.begin(), v.end()};
  }
  void WriteSeeds(const std::string& path) const {
    std::ofstream out(path);
    for (const std::string& s : Ask("--seeds")) out << s << "\n";
  }

  // The requests answered for good: without the failures a crawler fetches
  // again (no response, 408, 429, 5xx), which may repeat.
  std::vector<ServedRequest> FinalRequests() const {
    std::vector<ServedRequest> out;
    for (const ServedRequest& q : Requests()) {
      if (q.status != 0 && q.status != 408 && q.status != 429 && q.status < 500)
        out.push_back(q);
    }
    return out;
  }
  // The request log so far (complete after Stop()).
  std::vector<ServedRequest> Requests() const {
    std::vector<ServedRequest> out;
    std::ifstream in(log_);
    for (std::string line; std::getline(in, line);) {
      std::istringstream fields(line);
      ServedRequest r;
      if (fields >> r.start_us >> r.reply_us >> r.end_us >> r.authority >> r.status >>
          r.target) {
        fields >> r.local;
        out.push_back(r);
      }
    }
    return out;
  }

 private:
  std::string args_, log_;
  pid_t pid_ = -1;
  unsigned port_ = 0, hosts_ = 0, dns_port_ = 0;
  std::string vhost_domain_;  // "" in port mode and --web
};

}  // namespace crawler::testing

#endif  // TESTS_SUPPORT_TESTSITE_PROCESS_H_
