// The worker pipeline's figures, with the real binary against
// crawler-testsite: links a full fixed-size filter refuses are their own
// figure (crawl.filter_full), not "duplicates" (once they were counted as
// duplicates). Both must agree with the filter's own counters.
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "crawl_output.h"
#include "run_command.h"
#include "testsite_process.h"

namespace crawler::engine {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using testing::CommandResult;
using testing::RunCommand;
using testing::TempDir;
using testing::TestSite;

using testing::kCrawler;

TEST_CASE(
    "A full fixed-size filter: refused links are counted as filter_full, not duplicates",
    "[engine][worker]") {
  std::string dir = TempDir("filter-full");
  TestSite site("--pages 600 --hosts 2", dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  std::string out = dir + "/out";
  // A cuckoo filter of one fixed layer sized for 160 URLs (10 per stripe)
  // on a 600-page site: it fills up and refuses the rest.
  CommandResult r = RunCommand(
      kCrawler + " crawl --seeds " + dir + "/seeds.txt --out " + out +
      " --set frontier.min_delay_s=0 --set dedup.type=cuckoo --set dedup.scaling=false"
      " --set dedup.capacity=160");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("refused by a full fixed-size filter") != std::string::npos);
  r = RunCommand(kCrawler + " stats " + out + " --json");
  REQUIRE(r.exit_code == 0);
  json::object s = json::parse(r.output).as_object();
  const json::object& c = s.at("crawl").as_object();
  const json::object& d = s.at("dedup").as_object();
  uint64_t full = c.at("filter_full").to_number<uint64_t>();
  CHECK(full > 0);
  CHECK(full == d.at("inserts_full").to_number<uint64_t>());
  CHECK(c.at("duplicates").to_number<uint64_t>() ==
        d.at("inserts_duplicate").to_number<uint64_t>());
  r = RunCommand(kCrawler + " stats " + out);
  CHECK(r.output.find("refused by a full fixed-size filter") != std::string::npos);
  site.Stop();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace crawler::engine
