// /metrics ([metrics] listen) of the real `crawler` binary crawling the real
// crawler-testsite: scraped over HTTP mid-crawl and parsed by an independent
// reader (prometheus_client); the figures agree with each other and with the
// crawl's own fetch log. Bad listen addresses are setup errors naming the key.
// (The cluster figures are checked in cluster_test.cc, with a real Redis.)
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "crawl_output.h"
#include "loopback.h"
#include "metrics_scrape.h"
#include "run_command.h"
#include "testsite_process.h"

namespace crawler::report {
namespace {

using testing::AttemptedUrls;
using testing::CommandResult;
using testing::MetricsUrl;
using testing::ReadText;
using testing::RunCommand;
using testing::Scrape;
using testing::Scraped;
using testing::Spawn;
using testing::StatusLineOf;
using testing::TempDir;
using testing::TestSite;
using testing::WaitExitFor;

TEST_CASE(
    "Metrics: /metrics mid-crawl parses as Prometheus text and agrees with the crawl",
    "[engine][metrics]") {
  std::string dir = TempDir("metrics");
  TestSite site("--pages 300 --hosts 3 --slow-ms 10 --delay-ms 20",
                dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  pid_t pid = Spawn(std::string(CRAWLER_BINARY) + " crawl --seeds " + dir +
                        "/seeds.txt --out " + dir +
                        "/out --set metrics.listen=127.0.0.1:0 "
                        "--set frontier.min_delay_s=0.03 --set checkpoint.interval_s=1",
                    dir + "/crawl.out");
  testing::Reaper reap_pid(pid);
  std::string url = MetricsUrl(dir + "/crawl.out");
  INFO(ReadText(dir + "/crawl.out"));
  REQUIRE(url.rfind("http://127.0.0.1:", 0) == 0);

  Scraped first = Scrape(url);
  INFO(first.error);
  REQUIRE(first.ok);
  // The second scrape once the crawl has fetched a page and written a
  // checkpoint, however long a busy machine takes to get there.
  Scraped second;
  REQUIRE(testing::WaitFor(
      [&] {
        second = Scrape(url);
        return !second.ok ||
               (second.Get("crawler_pages_total{class=2xx}") > 0 &&
                second.Get("crawler_checkpoints_total{result=written}") >= 1);
      },
      120));
  INFO(second.error);
  REQUIRE(second.ok);
  CHECK(StatusLineOf(url, "/other").rfind("HTTP/1.0 404", 0) == 0);

  CHECK(second.content_type.rfind("text/plain; version=0.0.4", 0) == 0);
  // The families docs/metrics.md names, each with its type (prometheus_client
  // names a counter's family without "_total").
  const std::map<std::string, std::string> expected = {
      {"crawler_pages", "counter"},
      {"crawler_fetched_bytes", "counter"},
      {"crawler_fetch_errors", "counter"},
      {"crawler_frontier_urls", "gauge"},
      {"crawler_hosts", "gauge"},
      {"crawler_hosts_backoff", "gauge"},
      {"crawler_dedup_items", "gauge"},
      {"crawler_dedup_bytes", "gauge"},
      {"crawler_dedup_estimated_fpr", "gauge"},
      {"crawler_dedup_expected_false_seen", "gauge"},
      {"crawler_checkpoints", "counter"},
      {"crawler_checkpoint_last_duration_seconds", "gauge"},
      {"crawler_checkpoint_last_pause_seconds", "gauge"},
      {"crawler_metrics_render_seconds", "counter"},
      {"crawler_frontier_addresses", "gauge"},
      {"crawler_dns_queries", "counter"},
      {"crawler_dns_cache", "counter"},
      {"crawler_dns_failures", "counter"},
      {"crawler_dns_latency_seconds", "gauge"},
      {"crawler_resident_bytes", "gauge"},
      {"crawler_memory_bytes", "gauge"}};
  for (const auto& [family, type] : expected) {
    INFO(family);
    CHECK(second.types.count(family) == 1);
    CHECK(second.types[family] == type);
  }
  CHECK(second.Get("crawler_running{}") == 1);
  // Each scrape was rendered afresh, and counters only grow.
  CHECK(second.Get("crawler_metrics_renders_total{}") >
        first.Get("crawler_metrics_renders_total{}"));
  double pages_first = first.Sum("crawler_pages_total");
  double pages_second = second.Sum("crawler_pages_total");
  CHECK(pages_second > 0);
  CHECK(pages_second >= pages_first);
  CHECK(second.Get("crawler_fetched_bytes_total{class=2xx}") > 0);
  CHECK(second.Count("crawler_hosts") == 5);  // ready, politeness, ip, robots, blocked
  // Every page fetched was admitted through the filter first.
  CHECK(second.Get("crawler_dedup_items{}") >=
        second.Get("crawler_pages_total{class=2xx}"));
  CHECK(second.Get("crawler_checkpoints_total{result=written}") >= 1);
  // The parts and "other" add up to the resident set; the filter's part
  // holds at least its tables; three hosts are known.
  const double rss = second.Get("crawler_resident_bytes{}");
  CHECK(rss > 1e6);
  CHECK(second.Count("crawler_memory_bytes") == 10);
  CHECK(second.Sum("crawler_memory_bytes") == Approx(rss).epsilon(1e-9));
  CHECK(second.Get("crawler_memory_bytes{part=filter}") >=
        second.Get("crawler_dedup_bytes{}"));
  CHECK(second.Get("crawler_memory_bytes{part=frontier_hosts}") > 3 * 20);
  CHECK(second.Get("crawler_memory_bytes{part=frontier_addresses}") > 0);

  REQUIRE(WaitExitFor(pid, 300) == 0);
  site.Stop();
  // What the scrape counted had happened: the fetch log holds at least that.
  double attempted =
      static_cast<double>(AttemptedUrls(dir + "/out/fetch-log.jsonl").size());
  CHECK(attempted >= pages_second + second.Get("crawler_fetch_failures_total{}"));
  std::filesystem::remove_all(dir);
}

// A TCP connection to 127.0.0.1:PORT (-1 if refused); reads time out at
// 60 s, a wait no busy machine's scheduling is the cause of.
int Connect(unsigned port) {
  int fd = testing::ConnectLoopback(port);
  if (fd < 0) return -1;
  timeval tv{60, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

// True if the server closed `fd` (EOF or reset): waits for it (the read
// timeout) when `wait`, else says what has happened so far.
bool ClosedByServer(int fd, bool wait = true) {
  char c = 0;
  ssize_t n = ::recv(fd, &c, 1, wait ? 0 : MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

TEST_CASE(
    "Metrics: connections are capped: past 16, a connection is closed at once; the held "
    "ones stay, and scrapes work once they close",
    "[engine][metrics]") {
  std::string dir = TempDir("metrics_limits");
  TestSite site("--pages 100 --hosts 2 --slow-ms 10 --delay-ms 200",
                dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  pid_t pid = Spawn(std::string(CRAWLER_BINARY) + " crawl --seeds " + dir +
                        "/seeds.txt --out " + dir +
                        "/out --set metrics.listen=127.0.0.1:0 "
                        "--set frontier.min_delay_s=0.3 --set checkpoint.interval_s=1000",
                    dir + "/crawl.out");
  testing::Reaper reap_pid(pid);
  std::string url = MetricsUrl(dir + "/crawl.out");
  INFO(ReadText(dir + "/crawl.out"));
  REQUIRE(url.rfind("http://127.0.0.1:", 0) == 0);
  unsigned port = static_cast<unsigned>(std::stoul(url.substr(17)));
  // 16 idle connections are held; the ones past them are closed at once.
  // The one server thread accepts in the order the kernel queued them, so
  // the 16 are held before an extra one is seen: no wait between them.
  std::vector<int> held;
  for (int i = 0; i < 16; ++i) held.push_back(Connect(port));
  for (int i = 0; i < 3; ++i) {
    int extra = Connect(port);
    REQUIRE(extra >= 0);
    CHECK(ClosedByServer(extra));  // waits for the close, however late
    ::close(extra);
  }
  // Accepted before the extras were closed, and kept.
  CHECK_FALSE(ClosedByServer(held[0], /*wait=*/false));
  for (int fd : held) ::close(fd);
  // The server sees the closes in its own time: a scrape works once it has.
  std::string scrape_error;
  const bool scraped = testing::WaitFor(
      [&] {
        Scraped after_cap = Scrape(url);
        scrape_error = after_cap.error;
        return after_cap.ok;
      },
      60);
  INFO(scrape_error);
  CHECK(scraped);
  ::kill(pid, SIGINT);  // the crawl itself is not what this test is about
  CHECK(WaitExitFor(pid, 60) == 0);
  site.Stop();
  std::filesystem::remove_all(dir);
}

TEST_CASE("Metrics: a bad or busy listen address is a setup error naming the key",
          "[engine][metrics]") {
  std::string dir = TempDir("metrics_bad");
  TestSite site("--pages 20 --hosts 1", dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  std::string base = std::string(CRAWLER_BINARY) + " crawl --seeds " + dir + "/seeds.txt";
  CommandResult r =
      RunCommand(base + " --out " + dir + "/a --set metrics.listen=nonsense");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("metrics.listen") != std::string::npos);
  // The testsite's own port is taken.
  r = RunCommand(base + " --out " + dir +
                 "/b --set metrics.listen=127.0.0.1:" + std::to_string(site.port()));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("metrics.listen") != std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace crawler::report
