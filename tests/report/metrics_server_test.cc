// The /metrics server (report/metrics.h) on its own, in this process: out of
// descriptors (EMFILE), a connection it cannot accept must not turn its
// accept loop into a hot loop, and it serves again once descriptors are
// back. (The whole crawler's /metrics: metrics_test.cc.)
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <string>
#include <thread>

#include "report/metrics.h"
#include "run_command.h"

namespace crawler::report {
namespace {

// The lowest free descriptor number: with RLIMIT_NOFILE at it, no
// descriptor can be made (a new one always takes the lowest free number).
rlim_t LowestFreeDescriptor() {
  int fd = ::dup(0);
  ::close(fd);
  return static_cast<rlim_t>(fd);
}

TEST_CASE(
    "MetricsServer: out of descriptors (EMFILE), it waits instead of spinning, and "
    "serves again once they are back",
    "[engine][metrics][no-sanitizers]") {
  // [no-sanitizers]: the sanitizers' runtime needs descriptors of its own
  // (UBSan's vptr check tests memory through a pipe): with none left it
  // reports a false "invalid vptr" in asio. The tag becomes a ctest label
  // that the asan and tsan presets exclude; this case runs in the Release
  // build (CI step 2).
  auto server = MetricsServer::Start("127.0.0.1:0");
  REQUIRE(server.ok());
  std::atomic<bool> running{true};
  std::thread publisher([&] {  // the Run thread's part: fresh text when wanted
    while (running.load()) {
      if ((*server)->Wanted()) (*server)->Publish("up 1\n", 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  const std::string url = (*server)->url();
  const unsigned port = static_cast<unsigned>(std::stoul(url.substr(url.rfind(':') + 1)));
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);  // made before the limit
  REQUIRE(fd >= 0);
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
  rlimit low = saved;
  low.rlim_cur = LowestFreeDescriptor();  // none left for accept()
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  int connected = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  // The server met the queued connection and failed to accept it, twice:
  // it tried again after its wait.
  const bool retried =
      testing::WaitFor([&] { return (*server)->accept_errors() >= 2; }, 60);
  // Then the failures in one second, counted by the server (printed): a
  // wait of 100 ms between tries makes 10 (measured, Release); a loop
  // without the wait would try again as soon as accept fails, far more
  // often (not measured: the code has no such loop to run). A count of
  // events, not the CPU time a loaded machine would blur.
  const uint64_t before = (*server)->accept_errors();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const uint64_t failed = (*server)->accept_errors() - before;
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &saved) == 0);
  REQUIRE(connected == 0);  // queued in the listen backlog
  REQUIRE(retried);
  WARN("accept failures over 1 s with a connection the server could not accept: "
       << failed);
  CHECK(failed <= 20);
  // Descriptors back: the queued connection is accepted and answered.
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  const std::string req = "GET /metrics HTTP/1.0\r\n\r\n";
  REQUIRE(::send(fd, req.data(), req.size(), 0) == static_cast<ssize_t>(req.size()));
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;) got.append(buf, n);
  ::close(fd);
  INFO(got);
  CHECK(got.rfind("HTTP/1.0 200", 0) == 0);
  CHECK(got.find("up 1") != std::string::npos);
  running = false;
  publisher.join();
}

}  // namespace
}  // namespace crawler::report
