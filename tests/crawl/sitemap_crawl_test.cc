// Sitemaps end to end: the testsite's orphan pages (listed only by sitemaps:
// an index, a .xml.gz, robots.txt Sitemap: lines, /sitemap.xml) and its
// hostile ones (XXE, an entity bomb, a self-listing index, too deep a
// nesting), crawled by the real binary.
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "crawl_output.h"
#include "run_command.h"
#include "testsite_crawl.h"
#include "testsite_process.h"

namespace crawler::crawl {
namespace {

using engine::testsite_crawl::Crawl;
using engine::testsite_crawl::kExactDedup;
using testing::CommandResult;
using testing::LogLine;
using testing::ReadFetchLog;
using testing::ServedRequest;
using testing::TempDir;
using testing::TestSite;

TEST_CASE(
    "Sitemaps: pages only a sitemap lists are crawled (robots.txt Sitemap:, an index, "
    ".xml.gz); XXE, entity bombs, a loop and too deep a nesting are handled and logged",
    "[engine][testsite][sitemap]") {
  std::string dir = TempDir("sitemaps");
  TestSite site("--pages 60 --hosts 3 --orphans 9 --slow-ms 100", dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");

  SECTION("crawl.sitemaps = robots (the default): exactly the truth set, orphans too") {
    std::set<std::string> truth = site.Truth();
    CommandResult r =
        Crawl(dir + "/seeds.txt", dir + "/out",
              "--set frontier.min_delay_s=0 --set fetch.retry_base_s=0.05 " +
                  std::string(kExactDedup));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    std::multiset<std::string> attempted =
        testing::AttemptedUrls(dir + "/out/fetch-log.jsonl");
    CHECK(attempted.size() == truth.size());
    CHECK(std::set<std::string>(attempted.begin(), attempted.end()) == truth);
    // Hosts 0 and 2 name their sitemaps: their 9 orphans each were fetched.
    for (uint32_t h : {0u, 2u}) {
      for (int i = 0; i < 9; ++i) {
        std::string orphan = site.Origin(h) + "/orphan/" + std::to_string(i) + ".html";
        INFO(orphan);
        CHECK(attempted.count(orphan) == 1);
      }
    }
    // Nothing read through an entity, nothing past the nesting limit, each
    // sitemap once despite the index listing itself.
    std::map<std::string, int> requested;
    for (const ServedRequest& q : site.Requests()) ++requested[q.target];
    CHECK(requested["/sitemap-index.xml"] == 2);  // hosts 0 and 2, once each
    CHECK(requested["/sitemaps/deep.xml"] == 0);
    CHECK(requested["/orphan/deep.html"] == 0);
    for (const auto& [target, n] : requested) {
      INFO(target);
      CHECK(target.rfind("/evil/", 0) == std::string::npos);
    }
    std::string log = testing::ReadText(dir + "/out/crawler.log");
    CHECK(log.find("/sitemaps/evil.xml: sitemap:") != std::string::npos);
    CHECK(log.find("nested deeper than crawl.sitemap_max_depth") != std::string::npos);
    CHECK(testing::WarcNotAsLogged(dir + "/out").empty());
  }
  SECTION(
      "robots+default: /sitemap.xml too, so host 1 (no robots.txt) gives its orphans") {
    CommandResult r =
        Crawl(dir + "/seeds.txt", dir + "/out",
              "--set frontier.min_delay_s=0 --set crawl.sitemaps=robots+default");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    std::set<std::string> fetched;
    for (const LogLine& l : ReadFetchLog(dir + "/out/fetch-log.jsonl"))
      if (l.status == 200) fetched.insert(l.url);
    for (int i = 0; i < 9; ++i)
      CHECK(fetched.count(site.Origin(1) + "/orphan/" + std::to_string(i) + ".html") ==
            1);
  }
  SECTION("off: no sitemap is requested, no orphan found") {
    CommandResult r = Crawl(dir + "/seeds.txt", dir + "/out",
                            "--set frontier.min_delay_s=0 --set crawl.sitemaps=off");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const auto requests = site.Requests();
    // The crawl ran (every host's robots.txt and front page at least): the
    // loop below looks at something.
    REQUIRE(requests.size() >= 6);
    for (const ServedRequest& q : requests) {
      INFO(q.target);
      CHECK(q.target.find("sitemap") == std::string::npos);
      CHECK(q.target.rfind("/orphan/", 0) == std::string::npos);
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace crawler::crawl
