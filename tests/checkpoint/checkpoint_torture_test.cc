// The crash torture, with the real `crawler` binary against the real
// crawler-testsite: kill -9 at random moments (some during a checkpoint
// write, many during dedup compactions), resume, repeat, until the crawl
// completes; then the fetch log is the truth set with each URL once, the
// WARC holds each response once, the server saw no more repeats than the
// pages lost, and every resume adopted its dedup hash log.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "checkpoint_helpers.h"
#include "crawl_output.h"
#include "run_command.h"
#include "testsite_process.h"

namespace crawler::checkpoint {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// Whether a crawl into `out` got far enough to be resumed: it wrote
// start-config.toml (before anything else) or a checkpoint.
bool Started(const std::string& out) {
  return fs::exists(out + "/start-config.toml") || fs::exists(out + "/checkpoint") ||
         fs::exists(out + "/checkpoint.prev");
}
using engine::checkpoint_testing::CheckpointCompactions;
using engine::checkpoint_testing::CheckpointLogBytes;
using engine::checkpoint_testing::Distinct;
using engine::checkpoint_testing::kCrawler;
using engine::checkpoint_testing::kExactDedup;
using engine::checkpoint_testing::PageLinesAfter;
using testing::CommandResult;
using testing::ReadFetchLog;
using testing::ReadText;
using testing::RunCommand;
using testing::ServedRequest;
using testing::Spawn;
using testing::TempDir;
using testing::TestSite;
using testing::WaitExit;

// The checkpoint's compaction count, read while the crawler may be renaming
// its directories (a failed read: 0).
uint64_t PolledCompactions(const std::string& out) {
  try {
    return CheckpointCompactions(out);
  } catch (const std::exception&) {
    return 0;
  }
}

TEST_CASE("Crash torture: kill -9 at random moments and resume, until the crawl is done",
          "[.][checkpoint][torture]") {
  const char* variant = GENERATE("bloom", "cuckoo", "counting");
  SECTION(variant) {
    int pages = 20000;
    if (const char* p = std::getenv("CRAWLER_TORTURE_PAGES")) pages = std::atoi(p);
    std::string dir = TempDir(std::string("torture-") + variant);
    // With sitemaps: 200 pages a host that only sitemaps list (sitemap
    // entries are killed in flight and resumed like pages).
    TestSite site(
        "--pages " + std::to_string(pages) + " --hosts 3 --slow-ms 50 --orphans 200",
        dir + "/requests.log");
    site.WriteSeeds(dir + "/seeds.txt");
    std::set<std::string> truth = site.Truth();
    REQUIRE(truth.size() > static_cast<size_t>(pages));
    const std::string out = dir + "/out";
    // The checkpoint writer sleeps 30 ms after each file, so kills often
    // land during a write; checkpoints every 0.4 s.
    const std::string env = "env CRAWLER_CHECKPOINT_SLOW_MS=30 ";
    const std::string first =
        env + kCrawler + " crawl --seeds " + dir + "/seeds.txt --out " + out +
        " --config " + CRAWLER_SOURCE_DIR + "/configs/" + variant +
        ".toml --set frontier.min_delay_s=0 --set checkpoint.interval_s=0.4" +
        kExactDedup;
    const std::string resume = env + kCrawler + " crawl --resume " + out;
    const unsigned seed = testing::TortureSeed("crash torture");
    INFO("seed " << seed << " (CRAWLER_TORTURE_SEED)");
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> wait_ms(300, 1200);

    int kills = 0, during_write = 0, runs = 0, exit_code = -1, first_compacted = 0;
    uint64_t lost = 0, compactions = 0, compactions_fell = 0;
    // The fetch log's bytes a line, measured after each kill (0: not yet).
    // A run is also killed once the log holds (kills + 1) / 13 of the truth
    // set's lines, so a fast run cannot end the crawl before 12 kills: under
    // ASan in CI, with 2,000 pages, one crawl ended after 6 (seed
    // 1459838011) and `kills >= 10` failed.
    double line_bytes = 0;
    const std::string log = out + "/fetch-log.jsonl";
    while (true) {
      REQUIRE(runs < 60);
      // A kill before the crawl wrote OUT/start-config.toml (a loaded
      // machine: ctest -j4 beside the chaos tests) left nothing to resume
      // ("no such directory", exit 2): such a crawl is started again.
      pid_t pid =
          Spawn(runs == 0 || !Started(out) ? first : resume, dir + "/crawler.out");
      testing::Reaper reap_pid(pid);
      ++runs;
      // At least 12 kills, one of them after a checkpoint that counted a
      // compaction: if none of the 12 was (under ASan with a build beside it,
      // a 2,000-page crawl's 12 runs once all ended before the first
      // compaction, and the check below failed), the next kill waits for one.
      if (kills >= 12 && compactions > 0) {
        exit_code = WaitExit(pid);
        break;
      }
      const bool want_compacted = kills >= 12;
      bool want_write =
          kills % 3 == 2;  // every third kill: while a checkpoint is being written
      auto start = std::chrono::steady_clock::now();
      auto deadline = start + std::chrono::milliseconds(want_compacted ? 60000
                                                        : want_write   ? 5000
                                                                       : wait_ms(rng));
      bool exited = false;
      int status = 0;
      for (int tick = 0; std::chrono::steady_clock::now() < deadline; ++tick) {
        if (::waitpid(pid, &status, WNOHANG) == pid) {
          exited = true;
          break;
        }
        bool warm =
            std::chrono::steady_clock::now() > start + std::chrono::milliseconds(300);
        if (want_write && !want_compacted && warm && fs::exists(out + "/checkpoint.tmp"))
          break;
        // Every 50 ms; a read racing the checkpoint's renames counts as none.
        if (want_compacted && warm && tick % 25 == 0 && PolledCompactions(out) > 0) break;
        if (!want_compacted && line_bytes > 0 && tick % 25 == 0) {
          std::error_code ec;
          const uintmax_t size = fs::file_size(log, ec);
          if (!ec &&
              static_cast<double>(size) >=
                  line_bytes * static_cast<double>(truth.size() * (kills + 1)) / 13)
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      if (exited) {
        exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        break;
      }
      bool writing = fs::exists(out + "/checkpoint.tmp");
      ::kill(pid, SIGKILL);
      WaitExit(pid);
      ++kills;
      during_write += writing ? 1 : 0;
      // Whatever the moment of the kill, both checkpoints a resume may use
      // are whole (the publish renames are atomic: checkpoint.cc).
      for (const char* d : {"/checkpoint", "/checkpoint.prev"}) {
        if (fs::exists(out + d)) {
          INFO("kill " << kills);
          CHECK(engine::checkpoint_testing::CheckpointProblem(out + d) == "");
        }
      }
      lost += PageLinesAfter(log, CheckpointLogBytes(out));
      const std::string text = ReadText(log);
      const auto lines = std::count(text.begin(), text.end(), '\n');
      if (lines > 0)
        line_bytes = static_cast<double>(text.size()) / static_cast<double>(lines);
      // Carried across resumes: a checkpoint never counts fewer than the one
      // before it.
      uint64_t c = CheckpointCompactions(out);
      compactions_fell += c < compactions ? 1 : 0;
      compactions = std::max(compactions, c);
      if (c > 0 && first_compacted == 0) first_compacted = kills;
    }
    const std::string output = ReadText(dir + "/crawler.out");
    INFO(output);
    REQUIRE(exit_code == 0);
    WARN(variant << ": " << kills << " kills (" << during_write
                 << " during a checkpoint write), the first after a compaction: kill "
                 << first_compacted);
    CHECK(kills >= 10);
    CHECK(during_write >= 1);
    site.Stop();
    // Kills landed during compactions too (the chain grows 40x from 500;
    // the compactor rebuilds at every 1.19x): every resume adopted its hash
    // log cut back to the checkpoint, and the compactor never gave up.
    CHECK(output.find("no usable hash log") == std::string::npos);
    CHECK(output.find("compaction stopped") == std::string::npos);
    CommandResult stats = RunCommand(kCrawler + " stats " + out + " --json");
    REQUIRE(stats.exit_code == 0);
    const json::object dedup = json::parse(stats.output).at("dedup").as_object();
    // The filter that ran is the one configs/VARIANT.toml names, through
    // every resume (each loads the filter from its checkpoint).
    CHECK(dedup.at("variant").as_string() == variant);
    // Without compaction: 6-7 layers (500 x 2^6 > 20,000 / 16 stripes...).
    CHECK(dedup.at("layers_max").to_number<uint64_t>() <= 3);
    CHECK(compactions_fell == 0);
    CHECK(compactions > 0);
    CHECK(dedup.at("compactions").to_number<uint64_t>() >= compactions);

    // The fetch log is the truth set, each URL once.
    bool twice = false;
    std::set<std::string> fetched =
        Distinct(ReadFetchLog(out + "/fetch-log.jsonl"), &twice);
    CHECK_FALSE(twice);
    std::vector<std::string> missing, extra;
    std::set_difference(truth.begin(), truth.end(), fetched.begin(), fetched.end(),
                        std::back_inserter(missing));
    std::set_difference(fetched.begin(), fetched.end(), truth.begin(), truth.end(),
                        std::back_inserter(extra));
    INFO("missing " << missing.size() << (missing.empty() ? "" : ": " + missing[0]));
    INFO("extra " << extra.size() << (extra.empty() ? "" : ": " + extra[0]));
    CHECK(missing.empty());
    CHECK(extra.empty());

    // The WARC, read back by warcio, holds each logged response exactly once
    // (every attempt of a URL fetched again is a response of its own).
    std::vector<std::string> wrong = testing::WarcNotAsLogged(out);
    INFO((wrong.empty() ? "" : "WARC differs from the log at " + wrong[0]));
    CHECK(wrong.empty());
    // Each WARC file's CDXJ index holds exactly its records, the files a
    // resume cut included (indexed again from the file), as warcio's.
    CHECK(testing::CdxjNotAsWarcio(out) == "");

    // The server's count: repeats only for pages fetched after the
    // checkpoint a resume went back to (plus those in flight at the kill:
    // one per host).
    uint64_t page_requests = 0;
    std::set<std::string> served;
    for (const ServedRequest& q : site.FinalRequests()) {  // retried failures aside
      if (q.target == "/robots.txt") continue;
      ++page_requests;
      served.insert(q.Url());
    }
    uint64_t repeats = page_requests - served.size();
    INFO("kills " << kills << " (" << during_write << " during a checkpoint write), runs "
                  << runs << ", repeats " << repeats << ", pages after lost checkpoints "
                  << lost);
    CHECK(repeats <= lost + static_cast<uint64_t>(kills) * 3);
    fs::remove_all(dir);
  }
}

// URLs (robots.txt aside) with more than one full 200 capture in the WARC.
std::vector<std::string> CapturedTwice(const std::vector<testing::WarcRecord>& records) {
  std::map<std::string, int> captures;
  for (const testing::WarcRecord& r : records) {
    if (r.type == "response" && r.status == "200" && !r.uri.ends_with("/robots.txt"))
      ++captures[r.uri];
  }
  std::vector<std::string> twice;
  for (const auto& [url, n] : captures)
    if (n > 1) twice.push_back(url + " x" + std::to_string(n));
  return twice;
}

TEST_CASE(
    "Crash torture with recrawl: kill -9 a continuous crawl at random moments and "
    "resume; the URL history comes back with each checkpoint, so no unchanged page is "
    "captured twice and every revisit record refers to a capture in the WARC",
    "[.][checkpoint][torture-history]") {
  std::string dir = TempDir("torture-history");
  // A static site: every revisit of a page fetched whole is a 304.
  TestSite site("--pages 1000 --hosts 3 --slow-ms 50", dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  const std::set<std::string> truth = site.Truth();
  const std::string out = dir + "/out";
  const std::string env = "env CRAWLER_CHECKPOINT_SLOW_MS=30 ";
  const std::string first =
      env + kCrawler + " crawl --seeds " + dir + "/seeds.txt --out " + out +
      " --config " + CRAWLER_SOURCE_DIR +
      "/configs/cuckoo.toml --set frontier.min_delay_s=0 --set checkpoint.interval_s=0.4"
      " --set recrawl.enabled=true --set recrawl.interval_s=2"
      " --set recrawl.min_interval_s=1 --set recrawl.max_interval_s=8" +
      kExactDedup;
  const std::string resume = env + kCrawler + " crawl --resume " + out;
  const unsigned seed = testing::TortureSeed("recrawl crash torture");
  INFO("seed " << seed << " (CRAWLER_TORTURE_SEED)");
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> wait_ms(300, 1500);
  int kills = 0, during_write = 0;
  for (int run = 0; kills < 10; ++run) {
    REQUIRE(run < 30);
    pid_t pid = Spawn(run == 0 || !Started(out) ? first : resume, dir + "/crawler.out");
    testing::Reaper reap_pid(pid);
    const bool want_write = kills % 3 == 2;
    auto start = std::chrono::steady_clock::now();
    auto deadline = start + std::chrono::milliseconds(want_write ? 5000 : wait_ms(rng));
    int status = 0;
    bool exited = false;
    while (std::chrono::steady_clock::now() < deadline) {
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        exited = true;
        break;
      }
      bool warm =
          std::chrono::steady_clock::now() > start + std::chrono::milliseconds(300);
      if (want_write && warm && fs::exists(out + "/checkpoint.tmp")) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    INFO(ReadText(dir + "/crawler.out"));
    REQUIRE_FALSE(exited);  // a continuous crawl ends only when stopped
    during_write += fs::exists(out + "/checkpoint.tmp") ? 1 : 0;
    ::kill(pid, SIGKILL);
    WaitExit(pid);
    ++kills;
    for (const char* d : {"/checkpoint", "/checkpoint.prev"}) {
      if (fs::exists(out + d)) {
        INFO("kill " << kills);
        CHECK(engine::checkpoint_testing::CheckpointProblem(out + d) == "");
      }
    }
  }
  // The last run: until every page of the site has been fetched and 90% of
  // the pages captured whole were revisited (a host's revisits come after
  // its new URLs), then Ctrl-C (a continuous crawl's normal end).
  pid_t pid = Spawn(resume, dir + "/crawler.out");
  testing::Reaper reap_pid(pid);
  std::set<std::string> fetched, whole, not_modified;
  for (int i = 0; i < 1200 && !(std::includes(fetched.begin(), fetched.end(),
                                              truth.begin(), truth.end()) &&
                                not_modified.size() * 10 >= whole.size() * 9);
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    fetched.clear();
    for (const testing::LogLine& l :
         ReadFetchLog(out + "/fetch-log.jsonl", testing::LogRead::kLive)) {
      if (testing::Attempted(l)) fetched.insert(l.url);
      if (l.status == 200 && !l.robots_txt) whole.insert(l.url);
      if (l.status == 304) not_modified.insert(l.url);
    }
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ::kill(pid, SIGINT);
  const int exit_code = testing::WaitExitFor(pid, 120);
  const std::string output = ReadText(dir + "/crawler.out");
  INFO(output);
  REQUIRE(exit_code == 0);
  site.Stop();
  WARN(kills << " kills (" << during_write << " during a checkpoint write)");
  CHECK(during_write >= 1);
  std::vector<std::string> missing;
  std::set_difference(truth.begin(), truth.end(), fetched.begin(), fetched.end(),
                      std::back_inserter(missing));
  INFO("missing " << missing.size() << (missing.empty() ? "" : ": " + missing[0]));
  CHECK(missing.empty());

  const std::vector<testing::WarcRecord> records = testing::WarcRecords(out);
  std::vector<std::string> twice = CapturedTwice(records);
  INFO("captured twice: " << twice.size() << (twice.empty() ? "" : ": " + twice[0]));
  CHECK(twice.empty());
  CHECK(testing::RevisitProblem(records) == "");
  CHECK(testing::CdxjNotAsWarcio(out) == "");
  CommandResult stats = RunCommand(kCrawler + " stats " + out + " --json");
  REQUIRE(stats.exit_code == 0);
  const json::object crawl = json::parse(stats.output).at("crawl").as_object();
  size_t revisits = 0;
  for (const testing::WarcRecord& r : records) revisits += r.type == "revisit";
  // The history held every page fetched whole before the last run (each was
  // due again in it): nearly all of them were revisited.
  std::set<std::string> captured, revisited;
  for (const testing::WarcRecord& r : records) {
    if (r.type == "response" && r.status == "200" && !r.uri.ends_with("/robots.txt"))
      captured.insert(r.uri);
    if (r.type == "revisit") revisited.insert(r.uri);
  }
  WARN(revisits << " revisit records; " << revisited.size() << " of " << captured.size()
                << " pages captured were revisited");
  CHECK(revisited.size() * 10 >= captured.size() * 9);
  CHECK(crawl.at("revisits_not_modified").to_number<uint64_t>() +
            crawl.at("revisits_identical").to_number<uint64_t>() ==
        revisits);
  CHECK(revisits > 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace crawler::checkpoint
