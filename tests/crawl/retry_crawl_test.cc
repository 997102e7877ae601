// Retries end to end: the real binary against crawler-testsite failing on
// purpose (503, 429 with Retry-After, resets, hangs; robots.txt answering
// 503; a host whose port goes down for a while), each crawl ending with the
// whole truth set and the back-off measured at the server; and what a filter
// that can erase does with a page given up (forgetting).
#include <algorithm>
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "crawl_output.h"
#include "run_command.h"
#include "testsite_crawl.h"
#include "testsite_process.h"

namespace crawler::crawl {
namespace {

using engine::testsite_crawl::Crawl;
using engine::testsite_crawl::kExactDedup;
using testing::Attempted;
using testing::CommandResult;
using testing::LogLine;
using testing::ReadFetchLog;
using testing::ServedRequest;
using testing::TempDir;
using testing::TestSite;

TEST_CASE(
    "Retries: every URL fails its first two attempts (503, 429 with Retry-After, a "
    "reset, a hang past the timeout): the whole truth set, each failed attempt logged "
    "and not final, the back-off honoured at the server",
    "[engine][testsite][retry]") {
  std::string dir = TempDir("retries");
  // Small (a 429 holds its host 1 s twice per URL): max_depth 2.
  TestSite site("--pages 9 --hosts 3 --slow-ms 10 --fail-first 2 --fail-hang-ms 700",
                dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  std::set<std::string> truth = site.Truth("--max-depth 2");
  const double base = 0.2;
  CommandResult r = Crawl(
      dir + "/seeds.txt", dir + "/out",
      "--set frontier.min_delay_s=0.01 --set fetch.timeout_s=0.5 --set crawl.max_depth=2 "
      "--set fetch.connect_timeout_s=0.5 "
      "--set fetch.max_retries=3 --set fetch.retry_base_s=0.2 "
      // Two of three answers are 429/503: the hosts' back-off grows to its
      // cap and stays there; a small cap keeps the test short.
      "--set frontier.backoff_min_s=0.05 --set frontier.backoff_max_s=0.3 " +
          std::string(kExactDedup));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  site.Stop();

  // The final lines are the truth set, each once (100% coverage).
  std::multiset<std::string> attempted;
  std::map<std::string, std::vector<LogLine>> lines;
  uint64_t not_final = 0;
  for (const LogLine& l : ReadFetchLog(dir + "/out/fetch-log.jsonl")) {
    if (Attempted(l)) attempted.insert(l.url);
    if (!l.robots_txt && l.error != "robots") lines[l.url].push_back(l);
    not_final += l.final ? 0 : 1;
  }
  CHECK(attempted.size() == truth.size());
  CHECK(std::set<std::string>(attempted.begin(), attempted.end()) == truth);
  // Each page: its failed attempts (not final), then one final line. (A
  // reset on a reused connection is sent again by libcurl itself once, so
  // the log may show one failure where the server saw two.)
  size_t checked = 0;
  for (const auto& [url, ls] : lines) {
    INFO(url);
    REQUIRE(ls.size() >= 2);
    for (size_t i = 0; i < ls.size(); ++i) {
      CHECK(ls[i].attempt == static_cast<int64_t>(i + 1));
      CHECK(ls[i].final == (i + 1 == ls.size()));
    }
    ++checked;
  }
  CHECK(checked > 20);
  // The stats count every attempt fetched again.
  auto stats = testing::ReadStats(dir + "/out");
  CHECK(stats.at("crawl").at("retries").to_number<uint64_t>() == not_final);

  // At the server: after a 429 (Retry-After: 1) the host waits 1 s; after a
  // 503, at least half the base back-off (its jitter's low end). Measured
  // from when the answer began to be written: the crawler's wait starts
  // after it has the answer, so this gap cannot be short of it. (From when
  // the write returned, a loaded server thread made it 0.987 s once.)
  // Every page was requested until it was answered: at least 3 times.
  std::map<std::string, int> requests;
  for (const ServedRequest& q : site.Requests()) ++requests[q.Url()];
  for (const auto& [url, ls] : lines) {
    INFO(url);
    CHECK(requests[url] >= 3);
  }
  std::map<std::string, std::vector<ServedRequest>> by_host;
  for (const ServedRequest& q : site.Requests()) by_host[q.authority].push_back(q);
  size_t after_429 = 0, after_503 = 0;
  for (auto& [host, reqs] : by_host) {
    std::sort(reqs.begin(), reqs.end(),
              [](auto& a, auto& b) { return a.start_us < b.start_us; });
    for (size_t i = 0; i + 1 < reqs.size(); ++i) {
      double gap = (static_cast<double>(reqs[i + 1].start_us) -
                    static_cast<double>(reqs[i].reply_us)) /
                   1e6;
      INFO(host << " after " << reqs[i].target << " (" << reqs[i].status << "): " << gap
                << " s");
      if (reqs[i].status == 429) {
        CHECK(gap >= 1.0 - 2e-6);  // microsecond truncation
        ++after_429;
      } else if (reqs[i].status == 503) {
        CHECK(gap >= base / 2 - 2e-6);
        ++after_503;
      }
    }
  }
  CHECK(after_429 > 0);
  CHECK(after_503 > 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "Retries: robots.txt answering 503 is fetched again with back-off, the host's pages "
    "waiting; past fetch.max_retries the host is fully disallowed",
    "[engine][testsite][retry]") {
  std::string dir = TempDir("robots_retries");
  const double base = 0.2;
  const std::string opts =
      "--set frontier.min_delay_s=0.01 --set crawl.max_depth=2 --set "
      "fetch.retry_base_s=0.2 --set fetch.max_retries=3 " +
      std::string(kExactDedup);
  // Each robots.txt request's interval after the previous one, by host.
  auto robots_gaps = [](const TestSite& site) {
    std::map<std::string, std::vector<ServedRequest>> by_host;
    for (const ServedRequest& q : site.Requests())
      if (q.target == "/robots.txt") by_host[q.authority].push_back(q);
    return by_host;
  };

  SECTION("two 503s, then the rules: the whole truth set, robots.txt asked 3 times") {
    TestSite site("--pages 9 --hosts 3 --robots-fail-first 2", dir + "/requests.log");
    site.WriteSeeds(dir + "/seeds.txt");
    std::set<std::string> truth = site.Truth("--max-depth 2");
    CommandResult r = Crawl(dir + "/seeds.txt", dir + "/out", opts);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    site.Stop();
    std::multiset<std::string> attempted =
        testing::AttemptedUrls(dir + "/out/fetch-log.jsonl");
    CHECK(attempted.size() == truth.size());
    CHECK(std::set<std::string>(attempted.begin(), attempted.end()) == truth);
    auto by_host = robots_gaps(site);
    CHECK(by_host.size() == 3);
    for (auto& [host, reqs] : by_host) {
      INFO(host);
      REQUIRE(reqs.size() == 3);
      std::sort(reqs.begin(), reqs.end(),
                [](auto& a, auto& b) { return a.start_us < b.start_us; });
      CHECK(reqs[0].status == 503);
      CHECK(reqs[1].status == 503);
      CHECK(reqs[2].status != 503);  // the rules (host 1 has none: 404)
      // The back-off: base x 2^n x at least 0.5, from when the answer began
      // to be written (the crawler's wait starts after it has it).
      for (size_t i = 1; i < 3; ++i) {
        double gap = (static_cast<double>(reqs[i].start_us) -
                      static_cast<double>(reqs[i - 1].reply_us)) /
                     1e6;
        CHECK(gap >= base * (1 << (i - 1)) / 2 - 2e-6);
      }
      // No page of the host before its rules were known.
      for (const ServedRequest& q : site.Requests())
        if (q.authority == host && q.target != "/robots.txt")
          CHECK(q.start_us >= reqs[2].reply_us);
    }
    CHECK_THAT(testing::ReadText(dir + "/out/crawler.log"),
               Catch::Contains("fetched again in"));
  }

  SECTION("503 past every retry: the host is fully disallowed, its pages logged") {
    TestSite site("--pages 9 --hosts 1 --robots-fail-first 100", dir + "/requests.log");
    site.WriteSeeds(dir + "/seeds.txt");
    CommandResult r = Crawl(dir + "/seeds.txt", dir + "/out", opts);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    site.Stop();
    auto by_host = robots_gaps(site);
    REQUIRE(by_host.size() == 1);
    CHECK(by_host.begin()->second.size() == 4);  // 1 + fetch.max_retries
    size_t pages = 0, skipped = 0;
    for (const ServedRequest& q : site.Requests()) pages += q.target != "/robots.txt";
    for (const LogLine& l : ReadFetchLog(dir + "/out/fetch-log.jsonl"))
      skipped += l.error == "robots";
    CHECK(pages == 0);
    CHECK(skipped >= 1);  // the seed, logged as disallowed (no page lost silently)
    CHECK_THAT(
        testing::ReadText(dir + "/out/crawler.log"),
        Catch::Contains("after 3 retries: the host is treated as fully disallowed"));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "Parking: a host whose port goes down for 3 s mid-crawl is parked after "
    "frontier.park_after refused connections in a row (its next fetch waits park_s), "
    "its queue kept: the whole truth set; without parking it is tried again and again",
    "[engine][testsite][retry]") {
  std::string dir = TempDir("parking");
  struct Outcome {
    std::vector<std::string> lost;  // truth URLs with no answer
    size_t refused = 0;             // attempts whose connection was refused
    std::string log;
  };
  auto crawl = [&](const std::string& name, double park_s) {
    TestSite site("--pages 60 --hosts 2 --down-after 5 --down-ms 3000",
                  dir + "/" + name + "-requests.log");
    site.WriteSeeds(dir + "/seeds.txt");
    std::set<std::string> truth = site.Truth();
    CommandResult r = Crawl(dir + "/seeds.txt", dir + "/" + name,
                            "--set frontier.min_delay_s=0.02 --set fetch.max_retries=5 "
                            "--set fetch.retry_base_s=0.05 --set fetch.retry_max_s=1 "
                            "--set frontier.park_after=2 --set frontier.park_s=" +
                                std::to_string(park_s) + " " + kExactDedup);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    site.Stop();
    // A truth URL is lost if its final line is a refused connection to host
    // 0 (the one that went down), or if it has none.
    Outcome out;
    std::set<std::string> finals;
    const std::string host0 = site.Origin(0) + "/";
    for (const LogLine& l : ReadFetchLog(dir + "/" + name + "/fetch-log.jsonl")) {
      if (l.error != "connect" || l.url.rfind(host0, 0) != 0) {
        if (l.final) finals.insert(l.url);
        continue;
      }
      ++out.refused;
      if (l.final) out.lost.push_back(l.url);
    }
    for (const std::string& u : truth)
      if (finals.count(u) == 0 &&
          std::find(out.lost.begin(), out.lost.end(), u) == out.lost.end())
        out.lost.push_back(u);
    out.log = testing::ReadText(dir + "/" + name + "/crawler.log");
    return out;
  };

  SECTION("parked: 2 refusals, then a 4 s wait past the outage; every page answered") {
    Outcome o = crawl("parked", 4);
    WARN("parked: " << o.refused << " refused attempts");
    INFO("lost: " << o.lost.size() << (o.lost.empty() ? "" : ", the first " + o.lost[0]));
    CHECK(o.lost.empty());
    CHECK(o.refused >= 2);  // the outage was met
    // park_after refusals, then one fetch per park_s (4 s > the 3 s outage):
    // at most one more, for a fetch already due when the host was parked.
    CHECK(o.refused <= 3);
    CHECK_THAT(o.log, Catch::Contains("parked, its next fetch in 4 s"));
  }
  SECTION("control, park_s = 0: the same outage, the host tried again and again") {
    Outcome o = crawl("unparked", 0);
    WARN("not parked: " << o.refused << " refused attempts, " << o.lost.size()
                        << " URLs given up");
    CHECK(o.refused >= 8);
    CHECK_THAT(o.log, !Catch::Contains("parked, its next fetch"));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "Forgetting: a page down for its first visits and given up is fetched again when "
    "linked again, with cuckoo and counting (dedup.allow_erase); with bloom it stays "
    "seen, counted as \"cannot forget\"",
    "[engine][testsite][retry][forget]") {
  const std::string variant = GENERATE("cuckoo", "counting", "bloom");
  SECTION(variant) {
    std::string dir = TempDir("forget-" + variant);
    // Pages I % 10 == 1 answer 503 to their first 2 requests; with
    // max_retries 1 a page gets 2 attempts: those pages are given up. Each
    // page is linked from many: most links to one come after its give-up.
    TestSite site("--pages 200 --hosts 2 --fail-first 2 --fail-pages 10",
                  dir + "/requests.log");
    site.WriteSeeds(dir + "/seeds.txt");
    const std::string out = dir + "/out";
    CommandResult r =
        Crawl(dir + "/seeds.txt", out,
              "--config " + std::string(CRAWLER_SOURCE_DIR) + "/configs/" + variant +
                  ".toml --set frontier.min_delay_s=0 "
                  "--set fetch.max_retries=1 --set fetch.retry_base_s=0.05 "
                  "--set fetch.retry_max_s=0.1 "
                  "--set frontier.backoff_min_s=0.02 "
                  "--set frontier.backoff_max_s=0.1 " +
                  std::string(kExactDedup));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    site.Stop();

    // By URL, its final lines in order: a 503 is a give-up (its 2nd attempt).
    std::map<std::string, std::vector<int64_t>> finals;
    for (const LogLine& l : ReadFetchLog(out + "/fetch-log.jsonl"))
      if (l.final && !l.robots_txt) finals[l.url].push_back(l.status);
    size_t given_up = 0, again = 0, ok_twice = 0;
    for (const auto& [url, statuses] : finals) {
      const auto first_503 = std::find(statuses.begin(), statuses.end(), 503);
      given_up += first_503 != statuses.end();
      again += first_503 != statuses.end() &&
               std::find(first_503, statuses.end(), 200) != statuses.end();
      ok_twice += std::count(statuses.begin(), statuses.end(), 200) > 1;
    }
    WARN(variant << ": " << given_up << " pages given up, " << again
                 << " of them fetched again when linked again");
    CHECK(given_up > 10);
    CHECK(ok_twice == 0);  // forgetting never fetches a page that was fetched
    CommandResult stats =
        testing::RunCommand(std::string(CRAWLER_BINARY) + " stats " + out + " --json");
    REQUIRE(stats.exit_code == 0);
    const boost::json::object crawl =
        boost::json::parse(stats.output).at("crawl").as_object();
    const uint64_t gave_up = crawl.at("gave_up").to_number<uint64_t>();
    const uint64_t forgotten = crawl.at("forgotten").to_number<uint64_t>();
    const uint64_t cannot = crawl.at("cannot_forget").to_number<uint64_t>();
    CHECK(gave_up >= given_up);  // each give-up counted (again: counted again)
    const std::string report =
        testing::RunCommand(std::string(CRAWLER_BINARY) + " stats " + out).output;
    if (variant == "bloom") {
      CHECK(again == 0);
      CHECK(forgotten == 0);
      CHECK(cannot == gave_up);
      CHECK_THAT(report,
                 Catch::Contains("cannot forget (bloom): " + std::to_string(cannot)));
    } else {
      CHECK(again > 0);
      CHECK(forgotten == gave_up);
      CHECK(cannot == 0);
      CHECK_THAT(report, Catch::Contains(std::to_string(forgotten) +
                                         " URLs given up or over the per-host cap"));
    }
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE(
    "Forgetting: URLs over crawl.max_pages_per_host are erased (cuckoo) or counted as "
    "\"cannot forget\" (bloom); the cap still holds, no page fetched twice",
    "[engine][testsite][forget]") {
  const std::string variant = GENERATE("cuckoo", "bloom");
  SECTION(variant) {
    std::string dir = TempDir("forget-cap-" + variant);
    TestSite site("--pages 150 --hosts 1", dir + "/requests.log");
    site.WriteSeeds(dir + "/seeds.txt");
    const std::string out = dir + "/out";
    CommandResult r =
        Crawl(dir + "/seeds.txt", out,
              "--config " + std::string(CRAWLER_SOURCE_DIR) + "/configs/" + variant +
                  ".toml --set frontier.min_delay_s=0 "
                  "--set crawl.max_pages_per_host=30 " +
                  std::string(kExactDedup));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    site.Stop();
    std::map<std::string, int> fetched;  // by URL: fetches (any status)
    for (const LogLine& l : ReadFetchLog(out + "/fetch-log.jsonl"))
      if (Attempted(l) && !l.robots_txt) ++fetched[l.url];
    CHECK(fetched.size() <= 30);
    for (const auto& [url, n] : fetched) {
      INFO(url);
      CHECK(n == 1);
    }
    CommandResult stats =
        testing::RunCommand(std::string(CRAWLER_BINARY) + " stats " + out + " --json");
    REQUIRE(stats.exit_code == 0);
    const boost::json::object crawl =
        boost::json::parse(stats.output).at("crawl").as_object();
    const uint64_t cut = crawl.at("trap_guard").to_number<uint64_t>();
    CHECK(cut > 0);
    CHECK(crawl.at(variant == "bloom" ? "cannot_forget" : "forgotten")
              .to_number<uint64_t>() == cut);
    std::filesystem::remove_all(dir);
  }
}

}  // namespace
}  // namespace crawler::crawl
