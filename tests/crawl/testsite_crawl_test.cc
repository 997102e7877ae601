// The real `crawler` binary against the real crawler-testsite (both separate
// processes, 127.0.0.1 only). Checks, per dedup variant: the fetch log is the
// testsite's truth set exactly, no URL is requested twice (from the server's
// own request log), robots.txt is obeyed, the calendar trap is bounded,
// redirects are one fetch-log line per hop, and warcio (an independent reader)
// finds every fetched response in the WARC files. Also: politeness intervals
// and per-host concurrency measured at the server, failures (slow, huge, 404,
// 500, malformed, refused) each ending in the right fetch-log line, and a
// frontier far smaller than the queue spilling to disk with the same result.
#include "testsite_crawl.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "crawl_output.h"
#include "loopback.h"
#include "run_command.h"
#include "testsite_process.h"

namespace crawler::crawl {
namespace {

using engine::testsite_crawl::Crawl;
using engine::testsite_crawl::kExactDedup;
using testing::Attempted;
using testing::CommandResult;
using testing::LogLine;
using testing::Path;
using testing::ReadFetchLog;
using testing::RunCommand;
using testing::ServedRequest;
using testing::TempDir;
using testing::TestSite;
using testing::WarcResponses;

// The URLs fetched are exactly the truth set: what is missing, what is extra.
void CheckExactly(const std::set<std::string>& truth,
                  const std::set<std::string>& fetched) {
  std::vector<std::string> missing, extra;
  std::set_difference(truth.begin(), truth.end(), fetched.begin(), fetched.end(),
                      std::back_inserter(missing));
  std::set_difference(fetched.begin(), fetched.end(), truth.begin(), truth.end(),
                      std::back_inserter(extra));
  INFO("missing " << missing.size() << (missing.empty() ? "" : ": " + missing[0]));
  INFO("extra " << extra.size() << (extra.empty() ? "" : ": " + extra[0]));
  CHECK(missing.empty());
  CHECK(extra.empty());
}

TEST_CASE("Testsite crawl: each dedup variant fetches exactly the truth set, once each",
          "[engine][testsite]") {
  const char* variant = GENERATE("bloom", "cuckoo", "counting");
  SECTION(variant) {
    std::string dir = TempDir(std::string("site-") + variant);
    // 4 hosts: 3 crawlable (2,250 pages) and one whose robots.txt answers 500.
    TestSite site("--pages 3000 --hosts 4 --slow-ms 300", dir + "/requests.log");
    site.WriteSeeds(dir + "/seeds.txt");
    std::set<std::string> truth = site.Truth();
    REQUIRE(truth.size() > 2000);
    CommandResult r =
        Crawl(dir + "/seeds.txt", dir + "/out",
              std::string("--config ") + CRAWLER_SOURCE_DIR + "/configs/" + variant +
                  ".toml --set frontier.min_delay_s=0 " + kExactDedup);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    site.Stop();
    // The filter that ran is the one the config names (a config that did not
    // reach the filter would pass every other check here).
    CommandResult stats = testing::RunCommand(std::string(CRAWLER_BINARY) + " stats " +
                                              dir + "/out --json");
    REQUIRE(stats.exit_code == 0);
    CHECK(boost::json::parse(stats.output).at("dedup").at("variant").as_string() ==
          variant);

    std::vector<LogLine> log = ReadFetchLog(dir + "/out/fetch-log.jsonl");
    std::multiset<std::string> attempted;
    for (const LogLine& l : log) {
      if (Attempted(l)) attempted.insert(l.url);
    }
    std::set<std::string> distinct(attempted.begin(), attempted.end());
    CHECK(attempted.size() == distinct.size());  // no URL twice in the log
    CheckExactly(truth, distinct);

    // The server's own count: every URL answered for good exactly once,
    // nothing outside the truth set (so nothing disallowed by robots.txt).
    // A URL that always fails transiently (/status/500, /bad) is requested
    // 1 + fetch.max_retries (3) times.
    std::map<std::string, int> served, answered;
    for (const ServedRequest& q : site.Requests()) ++served[q.Url()];
    for (const ServedRequest& q : site.FinalRequests()) ++answered[q.Url()];
    int twice = 0, outside = 0, retried = 0;
    for (const auto& [url, n] : answered) twice += n > 1 ? 1 : 0;
    for (const auto& [url, n] : served) {
      outside += truth.count(url) == 0 ? 1 : 0;
      if (answered.count(url) == 0 && Path(url) != "/robots.txt") {
        INFO(url);
        CHECK(n == 4);
        ++retried;
      }
    }
    CHECK(retried > 0);
    CHECK(twice == 0);
    CHECK(outside == 0);
    CHECK(served.size() == truth.size());
    int private_served = 0, blocked_host_served = 0;
    for (const auto& [url, n] : served) {
      bool allow_all_host = url.rfind(site.Origin(1) + "/", 0) == 0;  // robots.txt 404
      private_served += Path(url).rfind("/private/", 0) == 0 && !allow_all_host ? 1 : 0;
      blocked_host_served +=
          url.rfind(site.Origin(3), 0) == 0 && Path(url) != "/robots.txt" ? 1 : 0;
    }
    CHECK(private_served == 0);       // hosts 0 and 2: Disallow: /private/
    CHECK(blocked_host_served == 0);  // host 3: robots.txt 500 = disallow all

    // The trap is bounded: max_depth (20) months per host, no more.
    int months = 0, robots_skips = 0;
    for (const LogLine& l : log) {
      months += Path(l.url).rfind("/cal/", 0) == 0 ? 1 : 0;
      robots_skips += l.error == "robots" ? 1 : 0;
    }
    CHECK(months == 3 * 20);
    CHECK(robots_skips > 500);  // host 3's pages and /private/ links: logged, not lost

    // Redirects: one line per hop, with its status and Location.
    for (const LogLine& l : log) {
      if (Path(l.url).rfind("/r/", 0) == 0 || Path(l.url).rfind("/loop/", 0) == 0) {
        INFO(l.url);
        CHECK(l.status == 302);
        CHECK(!l.location.empty());
      }
    }
    CHECK(attempted.count(site.Origin(0) + "/loop/a") == 1);
    CHECK(attempted.count(site.Origin(0) + "/loop/b") == 1);
    // The 8-hop chain stops after max_redirects (5) hops: 6 URLs fetched.
    int long_hops = 0;
    for (const std::string& u : distinct)
      long_hops += u.rfind(site.Origin(0) + "/r/long/", 0) == 0 ? 1 : 0;
    CHECK(long_hops == 6);

    // An independent reader sees every fetched response in the WARC files:
    // as many as the log has lines with a response (a 500 fetched again is
    // archived at each attempt).
    std::multiset<std::string> in_warc = WarcResponses(dir + "/out");
    std::map<std::string, size_t> responses;
    for (const LogLine& l : log)
      if (l.status != 0) ++responses[l.url];
    int with_response = 0, missing_in_warc = 0, doubled = 0;
    for (const auto& [url, n] : responses) {
      with_response += static_cast<int>(n);
      missing_in_warc += in_warc.count(url) < n ? 1 : 0;
      doubled += in_warc.count(url) > n ? 1 : 0;
    }
    CHECK(with_response > 2000);
    CHECK(missing_in_warc == 0);
    CHECK(doubled == 0);
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE("Testsite crawl: politeness measured at the server", "[engine][testsite]") {
  std::string dir = TempDir("polite");
  // Host 0's robots.txt says Crawl-delay: 0.1; min_delay is 0.05. max_depth 4 keeps it
  // short.
  TestSite site("--pages 60 --hosts 3 --crawl-delay 0.1 --slow-ms 10",
                dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  const double min_delay = 0.05, crawl_delay = 0.1;

  SECTION("one connection per host: intervals never below the delay") {
    CommandResult r = Crawl(dir + "/seeds.txt", dir + "/out",
                            "--set frontier.min_delay_s=0.05 --set crawl.max_depth=4");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    site.Stop();
    std::map<std::string, std::vector<ServedRequest>> by_port;
    for (const ServedRequest& q : site.Requests()) by_port[q.authority].push_back(q);
    REQUIRE(by_port.size() == 3);
    for (auto& [port, reqs] : by_port) {
      std::sort(reqs.begin(), reqs.end(),
                [](auto& a, auto& b) { return a.start_us < b.start_us; });
      double want = port == site.Authority(0) ? crawl_delay : min_delay;
      double shortest = 1e9;
      for (size_t i = 1; i < reqs.size(); ++i) {
        shortest = std::min(
            shortest, static_cast<double>(reqs[i].start_us - reqs[i - 1].start_us) / 1e6);
        // Never two at once: not before the previous answer began (its write
        // returning can lag the crawler's reading it).
        CHECK(reqs[i].start_us >= reqs[i - 1].reply_us);
      }
      INFO("port " << port << ": " << reqs.size() << " requests, shortest interval "
                   << shortest);
      CHECK(reqs.size() > 20);
      CHECK(shortest >= want);
    }
  }

  SECTION("two connections per host: never more than two transfers at once") {
    // Every response takes 100 ms and a host's next start is due 20 ms after the last,
    // so a second transfer opens while the first is still answering however loaded the
    // machine is (with instant answers the two rarely overlapped on a busy CI machine,
    // and the non-vacuity check below failed).
    site.Stop();
    TestSite slow_site("--pages 60 --hosts 3 --delay-ms 100", dir + "/requests-slow.log");
    slow_site.WriteSeeds(dir + "/seeds.txt");
    CommandResult r =
        Crawl(dir + "/seeds.txt", dir + "/out",
              "--set frontier.min_delay_s=0.02 --set frontier.max_connections_per_host=2 "
              "--set crawl.max_depth=4");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    slow_site.Stop();
    std::map<std::string, std::vector<std::pair<uint64_t, int>>>
        events;  // time, +1 start / -1 end
    for (const ServedRequest& q : slow_site.Requests()) {
      events[q.authority].push_back({q.start_us, +1});
      events[q.authority].push_back({q.reply_us, -1});  // the answer begun
    }
    int overall_peak = 0;
    for (auto& [port, ev] : events) {
      std::sort(ev.begin(), ev.end());  // an end before a start at the same microsecond
      int open = 0, peak = 0;
      for (auto [t, d] : ev) peak = std::max(peak, open += d);
      INFO("port " << port);
      CHECK(peak <= 2);
      overall_peak = std::max(overall_peak, peak);
    }
    CHECK(overall_peak == 2);  // the limit was reached, so the check above could fail
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("Testsite crawl: each failure ends in a fetch-log line and the crawl goes on",
          "[engine][testsite]") {
  std::string dir = TempDir("failures");
  TestSite site("--pages 10 --hosts 2 --slow-ms 4000 --huge-bytes 3000000",
                dir + "/requests.log");
  // A port where connections are refused, held for the whole test.
  testing::RefusedPort refused_port;
  const std::string refused = "http://127.0.0.1:" + std::to_string(refused_port.port());
  std::string o = site.Origin(1);  // host 1: robots.txt 404, everything allowed
  {
    std::ofstream seeds(dir + "/seeds.txt");
    seeds << o << "/slow\n"
          << o << "/huge\n"
          << o << "/missing/1.html\n"
          << o << "/status/500\n"
          << o << "/bad\n"
          << refused << "/\n"
          << o << "/p/1.html\n";
  }
  CommandResult r =
      Crawl(dir + "/seeds.txt", dir + "/out",
            "--set crawl.max_depth=0 --set frontier.min_delay_s=0 "
            "--set fetch.timeout_s=1 --set fetch.connect_timeout_s=1 "
            "--set fetch.max_body_bytes=1000000 --set fetch.retry_base_s=0.05");
  INFO(r.output);
  // It ends with losses (exit 3): /slow timed out and the refused host's
  // robots.txt had no answer; the 500, /bad (not HTTP) and the 404 are the
  // server's answers, not losses.
  REQUIRE(r.exit_code == 3);
  CHECK_THAT(r.output, Catch::Contains(
                           "lost (no server answered): 2 URLs (connect 1, timeout 1); 1 "
                           "hosts whose robots.txt had no answer (connect 1)"));
  std::map<std::string, LogLine> by_url;
  for (const LogLine& l : ReadFetchLog(dir + "/out/fetch-log.jsonl")) by_url[l.url] = l;
  REQUIRE(by_url.count(o + "/slow"));
  CHECK(by_url[o + "/slow"].error == "timeout");
  CHECK(by_url[o + "/slow"].status == 0);
  CHECK(by_url[o + "/huge"].status == 200);
  CHECK(by_url[o + "/huge"].truncated);
  CHECK(by_url[o + "/huge"].error == "too-large");
  CHECK(by_url[o + "/missing/1.html"].status == 404);
  CHECK(by_url[o + "/status/500"].status == 500);
  // Transient failures are fetched again (fetch.max_retries = 3): the last
  // line is attempt 4, final; a 404 is final at once.
  CHECK(by_url[o + "/status/500"].attempt == 4);
  CHECK(by_url[o + "/status/500"].final);
  CHECK(by_url[o + "/slow"].attempt == 4);
  CHECK(by_url[o + "/bad"].attempt == 4);
  CHECK(by_url[o + "/missing/1.html"].attempt == 1);
  CHECK(by_url[o + "/bad"].error == "protocol");
  CHECK(by_url[o + "/bad"].status == 0);
  // Refused: robots.txt is unreachable (RFC 9309: disallow all, after it was
  // fetched again as a page would be), so the page is logged as skipped for
  // robots, and counted lost (above).
  CHECK(by_url[refused + "/robots.txt"].error == "connect");
  CHECK(by_url[refused + "/robots.txt"].attempt == 4);
  CHECK(by_url[refused + "/robots.txt"].final);
  CHECK(by_url[refused + "/"].error == "robots");
  // And the crawl went on to the healthy page.
  CHECK(by_url[o + "/p/1.html"].status == 200);
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "Testsite crawl: a frontier far smaller than the queue spills and loses nothing",
    "[engine][testsite]") {
  std::string dir = TempDir("spill");
  TestSite site("--pages 2000 --hosts 3 --slow-ms 10", dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  std::set<std::string> truth = site.Truth();
  CommandResult r =
      Crawl(dir + "/seeds.txt", dir + "/out",
            "--set frontier.min_delay_s=0 --set frontier.max_memory_urls=50 " +
                std::string(kExactDedup));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // The summary reports how many URLs went to disk.
  const std::string label = "spilled to disk: ";
  size_t at = r.output.find(label);
  REQUIRE(at != std::string::npos);
  long spilled = std::stol(r.output.substr(at + label.size()));
  CHECK(spilled > 500);
  std::multiset<std::string> attempted =
      testing::AttemptedUrls(dir + "/out/fetch-log.jsonl");
  CHECK(attempted.size() == truth.size());
  CHECK(std::set<std::string>(attempted.begin(), attempted.end()) == truth);
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "Testsite crawl: a grown filter's lost pages agree with the stats' 'wrong \"seen\" "
    "(expected)' within 1.5x (a chain), stay below it (compacted), as 'pages lost' says",
    "[engine][testsite][fpr]") {
  // 20,000 pages on 3 hosts from capacity 200 at 10%: ~180 pages are
  // expected lost, 157 were (scripts/bench-fpr.sh). At 5% (~54 expected,
  // 44-50 lost) the lower bound was only ~1.7 sigma below the measured mean;
  // here it is ~3 sigma (a Poisson count of ~157).
  // Three hosts, not four: host 3's robots.txt is a 500 (disallow all), so
  // its 5,000 pages would pass the filter unfetched, their losses unseen.
  // Before the filter counted each new key's FPR, the engine summed
  // admitted x an FPR refreshed every 2 s: ~1 expected where ~140 were lost.
  // Compaction off (a chain): then the figure estimates the pages lost.
  // With compaction on, a URL wrongly taken for seen was never logged, so
  // the next rebuild forgets it and its next in-link admits it: the figure
  // counts wrong answers, an upper estimate of the pages lost.
  const bool compacting = GENERATE(false, true);
  std::string dir = TempDir("fpr_honesty");
  TestSite site("--pages 20000 --hosts 3", dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  std::set<std::string> truth = site.Truth();
  CommandResult r = Crawl(dir + "/seeds.txt", dir + "/out",
                          "--set frontier.min_delay_s=0 --set dedup.capacity=200 "
                          "--set dedup.error_rate=0.1 --set crawl.max_connections=16 "
                          "--set dedup.compact_growth=" +
                              std::string(compacting ? "1.25" : "0"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  site.Stop();
  std::multiset<std::string> attempted =
      testing::AttemptedUrls(dir + "/out/fetch-log.jsonl");
  size_t lost = 0;
  for (const std::string& u : truth) lost += attempted.count(u) == 0 ? 1 : 0;
  auto stats = testing::ReadStats(dir + "/out");
  double expected = stats.at("dedup").at("expected_false_seen").to_number<double>();
  WARN((compacting ? "compacting: " : "chain: ")
       << "lost " << lost << " of " << truth.size() << " pages; expected " << expected
       << "; filter items " << stats.at("dedup").at("items").as_int64() << ", attempted "
       << attempted.size());
  CHECK(expected >= 20);
  CHECK(static_cast<double>(lost) <= 1.5 * expected);
  if (!compacting) CHECK(static_cast<double>(lost) >= expected / 1.5);
  // With rebuilds, fewer pages are lost than the expected
  // wrong refusals (with compaction on; a chain's loss scatters around it).
  if (compacting) CHECK(static_cast<double>(lost) <= expected);
  std::filesystem::remove_all(dir);
}

// Run under TSan in CI (ctest label "concurrency"): 4 workers and 2
// connections per host race on the frontier, the filter, the WARC writer and
// the fetch log; the result must still be the truth set, each URL once.
TEST_CASE("Testsite crawl: four workers racing still fetch each URL once",
          "[.][concurrency]") {
  std::string dir = TempDir("workers");
  TestSite site("--pages 900 --hosts 3 --slow-ms 10", dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  std::set<std::string> truth = site.Truth("--max-depth 6");
  CommandResult r = Crawl(
      dir + "/seeds.txt", dir + "/out",
      "--set crawl.workers=4 --set crawl.max_connections=16 --set crawl.max_depth=6 "
      "--set frontier.min_delay_s=0 --set frontier.max_connections_per_host=2 "
      "--set frontier.max_memory_urls=100 " +
          std::string(kExactDedup));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  site.Stop();
  std::multiset<std::string> attempted =
      testing::AttemptedUrls(dir + "/out/fetch-log.jsonl");
  std::set<std::string> distinct(attempted.begin(), attempted.end());
  CHECK(attempted.size() == distinct.size());
  CHECK(distinct == truth);
  std::map<std::string, int> served;
  for (const ServedRequest& q : site.FinalRequests()) ++served[q.Url()];
  CHECK(served.size() == site.FinalRequests().size());  // nothing answered twice
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "Testsite crawl: include_assets fetches every page requisite (stylesheets, what "
    "they @import, images, srcset, fonts), nothing a CSS comment names; the CDXJ "
    "index of each WARC is warcio's",
    "[engine][testsite][assets]") {
  std::string dir = TempDir("assets");
  TestSite site("--pages 300 --hosts 3 --slow-ms 10 --assets", dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  std::set<std::string> truth = site.Truth();
  const std::string h0 = site.Origin(0);
  for (const char* p :
       {"/static/site.css", "/static/theme/base.css", "/static/theme/print.css",
        "/static/img/bg.png", "/static/fonts/body.woff2", "/static/fonts/body.woff",
        "/static/img/h1.png", "/static/img/3-2x.png"})
    REQUIRE(truth.count(h0 + p) == 1);
  CommandResult r = Crawl(dir + "/seeds.txt", dir + "/out",
                          "--set crawl.include_assets=true --set frontier.min_delay_s=0 "
                          "--set output.warc_rotate_bytes=1048576 " +
                              std::string(kExactDedup));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  site.Stop();
  std::multiset<std::string> attempted =
      testing::AttemptedUrls(dir + "/out/fetch-log.jsonl");
  std::set<std::string> distinct(attempted.begin(), attempted.end());
  CHECK(attempted.size() == distinct.size());
  CheckExactly(truth, distinct);
  CHECK(distinct.count(h0 + "/static/img/not-this.png") == 0);
  CHECK(testing::CdxjNotAsWarcio(dir + "/out") == "");
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "Testsite crawl: requisites on a static host of the same site are fetched "
    "(crawl.requisites_scope = site), not its pages; with scope, nothing of it",
    "[engine][testsite][assets]") {
  const std::string mode = GENERATE("site", "scope");
  std::string dir = TempDir("assets-host-" + mode);
  // h0.site.test's pages load their stylesheets, images and fonts from
  // h1.site.test, which is out of scope (the seed is h0's root only).
  TestSite site(
      "--pages 300 --hosts 2 --slow-ms 10 --vhosts site.test --assets "
      "--assets-host 1",
      dir + "/requests.log");
  const std::string h0 = site.Origin(0), h1 = site.Origin(1);
  std::ofstream(dir + "/seeds.txt") << h0 << "/\n";
  {
    std::ofstream config(dir + "/resolve.toml");
    config << "[fetch]\nresolve = [";
    for (const std::string& r : site.Resolve()) config << "\"" << r << "\", ";
    config << "]\n";
  }
  CommandResult r = Crawl(dir + "/seeds.txt", dir + "/out",
                          "--config " + dir +
                              "/resolve.toml --set crawl.include_assets=true "
                              "--set crawl.requisites_scope=" +
                              mode + " --set frontier.min_delay_s=0 " + kExactDedup);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  site.Stop();
  std::set<std::string> on_h0, on_h1;
  for (const std::string& u : testing::AttemptedUrls(dir + "/out/fetch-log.jsonl"))
    (u.rfind(h1 + "/", 0) == 0 ? on_h1 : on_h0).insert(u);
  CHECK(on_h0.size() > 100);
  for (const std::string& u : on_h0) CHECK(u.rfind(h0 + "/", 0) == 0);
  std::set<std::string> expected;
  if (mode == "site") {
    expected.insert(h1 + "/robots.txt");
    expected.insert(h1 + "/static/favicon.ico");
    for (const char* p :
         {"/static/site.css", "/static/theme/base.css", "/static/theme/print.css",
          "/static/img/bg.png", "/static/fonts/body.woff2", "/static/fonts/body.woff",
          "/static/img/h1.png", "/static/img/logo.svg"})
      expected.insert(h1 + p);
    for (int n = 0; n < 8; ++n) {
      expected.insert(h1 + "/static/img/" + std::to_string(n) + ".png");
      expected.insert(h1 + "/static/img/" + std::to_string(n) + "-2x.png");
    }
  }
  CHECK(on_h1 == expected);  // no page of h1, though h0's pages link to them
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "WACZ: a crawl with configs/archive.toml packaged as WACZ 1.1.1 passes an "
    "independent check (sizes, sha256, stored WARCs, every index line seekable); an "
    "existing file, a missing directory are refused",
    "[engine][testsite][wacz]") {
  std::string dir = TempDir("wacz");
  // Pages of a real size (--page-bytes 0): three WARC files of 1 MiB.
  TestSite site("--pages 300 --hosts 2 --slow-ms 10 --assets --page-bytes 0",
                dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  const std::string out = dir + "/out", wacz = dir + "/crawl.wacz";
  CommandResult r = Crawl(dir + "/seeds.txt", out,
                          std::string("--config ") + CRAWLER_SOURCE_DIR +
                              "/configs/archive.toml --set frontier.min_delay_s=0 "
                              "--set output.warc_rotate_bytes=1048576");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  site.Stop();
  const std::string crawler = CRAWLER_BINARY;
  CommandResult pack = RunCommand(crawler + " wacz " + out + " -o " + wacz);
  INFO(pack.output);
  REQUIRE(pack.exit_code == 0);
  CHECK_THAT(pack.output, Catch::Contains("WARC files"));
  CommandResult check = RunCommand(std::string("python3 ") + CRAWLER_SOURCE_DIR +
                                   "/tests/support/check_wacz.py " + wacz);
  INFO(check.output);
  CHECK(check.exit_code == 0);
  CHECK_THAT(check.output, Catch::StartsWith("ok: 3 WARC files"));

  auto refused = [&](const std::string& args, const std::string& why) {
    CommandResult again = RunCommand(crawler + " wacz " + args);
    INFO(args << ": " << again.output);
    CHECK(again.exit_code == 2);
    CHECK_THAT(again.output, Catch::Contains(why));
  };
  refused(out + " -o " + wacz, "exists");
  refused(dir + "/none -o " + dir + "/2.wacz", "not a crawl output directory");
  CHECK_FALSE(std::filesystem::exists(dir + "/2.wacz"));
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "WACZ of a running crawl, of the same crawl killed -9 and of it resumed to its end, "
    "each as its last checkpoint has it (the file cut there), each passes the check",
    "[engine][testsite][wacz]") {
  std::string dir = TempDir("wacz-running");
  TestSite site("--pages 300 --hosts 2 --delay-ms 50 --assets", dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  const std::string out = dir + "/out", crawler = CRAWLER_BINARY;
  pid_t pid =
      testing::Spawn(crawler + " crawl --seeds " + dir + "/seeds.txt --out " + out +
                         " --set crawl.include_assets=true --set frontier.min_delay_s=0 "
                         "--set checkpoint.interval_s=0.3 "
                         "--set output.warc_rotate_bytes=1048576",
                     dir + "/crawl.out");
  testing::Reaper reap_pid(pid);
  // Running: once a checkpoint exists past the first WARC file.
  auto files = [&] {
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(out + "/warc"))
      n += e.path().string().ends_with(".warc.gz");
    return n;
  };
  REQUIRE(testing::WaitFor(
      [&] {
        return std::filesystem::exists(out + "/checkpoint/MANIFEST.json") &&
               std::filesystem::exists(out + "/warc") && files() >= 2;
      },
      120));
  auto package = [&](const std::string& name, bool at_checkpoint) {
    const std::string wacz = dir + "/" + name + ".wacz";
    CommandResult pack = RunCommand(crawler + " wacz " + out + " -o " + wacz);
    INFO(name << ": " << pack.output);
    REQUIRE(pack.exit_code == 0);
    CHECK((pack.output.find("as checkpoint") != std::string::npos) == at_checkpoint);
    CommandResult check = RunCommand(std::string("python3 ") + CRAWLER_SOURCE_DIR +
                                     "/tests/support/check_wacz.py " + wacz);
    INFO(check.output);
    CHECK(check.exit_code == 0);
    CHECK_THAT(check.output, Catch::StartsWith("ok: "));
  };
  REQUIRE(::waitpid(pid, nullptr, WNOHANG) == 0);  // still crawling
  package("running", true);
  ::kill(pid, SIGKILL);
  testing::WaitExitFor(pid, 10);
  package("killed", true);
  CommandResult resumed = RunCommand(crawler + " crawl --resume " + out);
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  site.Stop();
  package("done", false);
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "Ctrl-C lets the requests in flight finish before the last checkpoint: the crawl "
    "resumed to its end asks the server for no URL twice",
    "[engine][testsite]") {
  // Every answer 300 ms late on 4 hosts, 2 connections each: at any moment
  // about 8 requests are in flight. The build before left them in flight
  // at the stop, so the resume asked for each of them again.
  std::string dir = TempDir("ctrl-c");
  TestSite site("--pages 120 --hosts 4 --delay-ms 300", dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  const std::set<std::string> truth = site.Truth();
  const std::string out = dir + "/out", crawler = CRAWLER_BINARY;
  const std::string sets =
      " --set frontier.min_delay_s=0 --set frontier.max_connections_per_host=2 " +
      std::string(kExactDedup);
  pid_t pid =
      testing::Spawn(crawler + " crawl --seeds " + dir + "/seeds.txt --out " + out + sets,
                     dir + "/crawl.out");
  testing::Reaper reap_pid(pid);
  REQUIRE(testing::WaitFor(
      [&] {
        return ReadFetchLog(out + "/fetch-log.jsonl", testing::LogRead::kLive).size() >=
               20;
      },
      60));
  ::kill(pid, SIGINT);
  const int exit_code = testing::WaitExitFor(pid, 60);
  const std::string stopped = testing::ReadText(dir + "/crawl.out");
  INFO(stopped);
  REQUIRE(exit_code == 0);
  CHECK_THAT(stopped, Catch::Contains("crawl stopped"));
  CHECK_THAT(testing::ReadText(out + "/crawler.log"),
             Catch::Contains("those in flight finish"));
  CommandResult resumed = RunCommand(crawler + " crawl --resume " + out);
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  site.Stop();
  // At the server: no URL answered 200 twice (a page fetched, then asked
  // again after the resume); the site's 500s are retried by design.
  std::map<std::string, int> asked;
  for (const ServedRequest& q : site.Requests())
    if (q.status == 200) ++asked[q.Url()];
  std::vector<std::string> twice;
  for (const auto& [url, n] : asked)
    if (n > 1) twice.push_back(url);
  INFO("asked twice: " << twice.size() << (twice.empty() ? "" : ": " + twice[0]));
  CHECK(twice.empty());
  std::set<std::string> fetched;
  for (const LogLine& l : ReadFetchLog(out + "/fetch-log.jsonl"))
    if (Attempted(l)) fetched.insert(l.url);
  CheckExactly(truth, fetched);
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "Testsite virtual hosts: one port, the Host header picks the host, fetch.resolve "
    "reaches the names",
    "[engine][testsite]") {
  std::string dir = TempDir("vhosts");
  TestSite site("--pages 300 --hosts 3 --slow-ms 10 --vhosts site.test",
                dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  std::set<std::string> truth = site.Truth();
  REQUIRE(site.Origin(2) == "http://h2.site.test:" + std::to_string(site.port()));
  // h7 is no host of this 3-host site: the server must answer 404, not serve
  // some other host's pages.
  std::string stranger = "http://h7.site.test:" + std::to_string(site.port());
  {
    std::ofstream seeds(dir + "/seeds.txt", std::ios::app);
    seeds << stranger << "/p/1.html\n";
  }
  std::ofstream config(dir + "/resolve.toml");
  config << "[fetch]\nresolve = [\"h7.site.test:" << site.port() << ":127.0.0.1\"";
  for (const std::string& r : site.Resolve()) config << ", \"" << r << "\"";
  config << "]\n";
  config.close();
  CommandResult r = Crawl(
      dir + "/seeds.txt", dir + "/out",
      "--config " + dir + "/resolve.toml --set frontier.min_delay_s=0 " + kExactDedup);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  site.Stop();
  std::set<std::string> fetched;
  std::map<std::string, int64_t> status;
  for (const LogLine& l : ReadFetchLog(dir + "/out/fetch-log.jsonl")) {
    if (Attempted(l)) fetched.insert(l.url);
    status[l.url] = l.status;
  }
  CHECK(status[stranger + "/p/1.html"] == 404);
  fetched.erase(stranger + "/robots.txt");
  fetched.erase(stranger + "/p/1.html");
  CHECK(fetched == truth);
  // The server saw each name in the Host header, and only those.
  std::set<std::string> authorities;
  for (const ServedRequest& q : site.Requests()) authorities.insert(q.authority);
  CHECK(authorities ==
        std::set<std::string>{site.Authority(0), site.Authority(1), site.Authority(2),
                              stranger.substr(std::string("http://").size())});
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace crawler::crawl
