// The command line's smaller verbs, with the real binary: `crawler
// --version`, `crawler index` (the CDXJ index of WARC files, written again
// from the files and checked against warcio's), and SIGUSR1 (a checkpoint
// now, while the crawl goes on).
#include <signal.h>

#include <algorithm>
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint_helpers.h"
#include "crawl_output.h"
#include "loopback.h"
#include "redis_server.h"
#include "run_command.h"
#include "testsite_process.h"

namespace crawler::cli {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using testing::CommandResult;
using testing::kCrawler;
using testing::ReadText;
using testing::RunCommand;
using testing::TempDir;
using testing::TestSite;
using testing::WaitFor;

TEST_CASE("CLI: --version names the crawler, its build and its libraries, exit 0",
          "[engine][cli]") {
  CommandResult r = RunCommand(kCrawler + " --version");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.rfind("crawler/", 0) == 0);
  CHECK_THAT(r.output, Catch::Contains(" build)"));
  CHECK_THAT(r.output, Catch::Contains("libcurl "));
}

// Each message names what was wrong, in the user's words, and a refused
// resume leaves nothing in the directory it was given.
TEST_CASE("CLI: a wrong command, config, crawl directory or Redis URL is named, exit 2",
          "[engine][cli]") {
  CommandResult r = RunCommand(kCrawler + " frobnicate");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("unknown command 'frobnicate'") &&
                           Catch::Contains("crawl, stats"));
  std::string dir = TempDir("cli_messages");
  r = RunCommand(kCrawler + " crawl --seeds /dev/null --config " + dir +
                 "/none.toml --out " + dir + "/out");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains(dir + "/none.toml: no such file"));
  CHECK_THAT(r.output, !Catch::Contains("TOML"));
  fs::create_directories(dir + "/not-a-crawl");
  r = RunCommand(kCrawler + " crawl --resume " + dir + "/not-a-crawl");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("not a crawl output directory"));
  CHECK(fs::is_empty(dir + "/not-a-crawl"));  // no crawler.log written into it
  r = RunCommand(kCrawler + " cluster-stats 127.0.0.1:1");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("'127.0.0.1:1': not a redis:// URL"));
  CHECK_THAT(r.output, !Catch::Contains("cluster.redis"));
  fs::remove_all(dir);
}

// Crawls `site` (its seeds written to DIR/seeds.txt) into `out` with the
// `sets`; the crawl must exit 0.
void CrawlInto(const TestSite& site, const std::string& dir, const std::string& out,
               const std::string& sets) {
  site.WriteSeeds(dir + "/seeds.txt");
  CommandResult r = RunCommand(kCrawler + " crawl --seeds " + dir + "/seeds.txt --out " +
                               out + " " + sets);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
}

// The README's exit-code table, the rows of the smaller verbs: each path
// with its code and a message naming what was wrong.
TEST_CASE(
    "CLI: exit codes of stats, wacz, index, normalize and cluster-stats as the README's "
    "table gives them: an output that cannot be written 1, an input that cannot be read "
    "2, a Redis or job that is not there 2",
    "[engine][cli]") {
  const std::string dir = TempDir("cli_exits");
  TestSite site("--pages 6 --hosts 1", dir + "/requests.log");
  const std::string out = dir + "/out";
  CrawlInto(site, dir, out, "--set frontier.min_delay_s=0 --set crawl.max_pages=3");
  struct Row {
    std::string command;
    int code;
    std::string says;
  };
  testing::RefusedPort refused;
  const std::string nowhere = dir + "/no-such-dir/file";
  std::ofstream(dir + "/garbage.warc.gz") << "not gzip at all\n";
  const std::vector<Row> rows = {
      {" stats " + out, 0, "Crawl"},
      {" stats " + out + " --html " + nowhere, 1, nowhere},
      {" stats " + dir + "/no-such-crawl", 2, "not a crawl output directory"},
      {" wacz " + out + " -o " + nowhere, 1, dir + "/no-such-dir"},
      {" wacz " + dir + "/no-such-crawl -o " + dir + "/x.wacz", 2, "no-such-crawl"},
      {" index " + dir + "/missing.warc.gz", 2, dir + "/missing.warc.gz"},
      {" index " + dir + "/garbage.warc.gz", 2, dir + "/garbage.warc.gz"},
      {" normalize http://a.test/", 0, "http://a.test/"},
      {" normalize 'http://a b/'", 1, "error: "},
      {" cluster-stats redis://127.0.0.1:" + std::to_string(refused.port()), 2,
       "127.0.0.1:" + std::to_string(refused.port())},
      {" cut-back " + dir + "/no-such-crawl", 2, "not a crawl output directory"},
      {" cut-back " + out, 2, "not a cluster node's crawl"},
      {" frobnicate", 2, "unknown command"},
  };
  for (const Row& row : rows) {
    CommandResult got = RunCommand(kCrawler + row.command);
    INFO("crawler" << row.command << "\n" << got.output);
    CHECK(got.exit_code == row.code);
    CHECK_THAT(got.output, Catch::Contains(row.says));
  }
  testing::RedisServer redis(dir + "/redis");
  CommandResult job =
      RunCommand(kCrawler + " cluster-stats " + redis.Url() + " --job nosuch");
  INFO(job.output);
  CHECK(job.exit_code == 2);
  CHECK_THAT(job.output, Catch::Contains("no cluster job 'nosuch'"));
  site.Stop();
  fs::remove_all(dir);
}

// Each .cdxj in OUT/warc, by file name.
std::map<std::string, std::string> Indexes(const std::string& out) {
  std::map<std::string, std::string> got;
  for (const auto& e : fs::directory_iterator(out + "/warc")) {
    if (e.path().extension() == ".cdxj")
      got[e.path().filename().string()] = ReadText(e.path().string());
  }
  return got;
}

size_t Lines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

TEST_CASE(
    "CLI: crawler index writes each WARC file's CDXJ again, as the crawl wrote it and "
    "as warcio indexes it; a file that is no WARC is named, exit 2, the others indexed",
    "[engine][cli][cdxj]") {
  std::string dir = TempDir("cli-index");
  TestSite site("--pages 300 --hosts 2", dir + "/requests.log");
  const std::string out = dir + "/out";
  // Small WARC files, so that the crawl writes several.
  CrawlInto(site, dir, out,
            "--set frontier.min_delay_s=0 --set output.warc_rotate_bytes=1048576");
  site.Stop();
  const std::map<std::string, std::string> written = Indexes(out);
  REQUIRE(written.size() >= 2);
  for (const auto& [name, text] : written) fs::remove(out + "/warc/" + name);

  CommandResult index = RunCommand(kCrawler + " index " + out + "/warc/*.warc.gz");
  INFO(index.output);
  REQUIRE(index.exit_code == 0);
  CHECK(Indexes(out) == written);
  CHECK(testing::CdxjNotAsWarcio(out) == "");
  // One line per file: "FILE: N records indexed", N its index's lines.
  for (const auto& [name, text] : written) {
    const std::string warc = name.substr(0, name.size() - 5) + ".warc.gz";
    CHECK_THAT(index.output, Catch::Contains(warc + ": " + std::to_string(Lines(text)) +
                                             " records indexed"));
  }

  // Bad input among good: the fetch log (not gzip) and a file that is not
  // there, each named, exit 2; the WARC file after them is indexed all the
  // same.
  const std::string first = out + "/warc/" + written.begin()->first;
  fs::remove(first);
  const std::string warc_of_first = first.substr(0, first.size() - 5) + ".warc.gz";
  CommandResult bad = RunCommand(kCrawler + " index " + out + "/fetch-log.jsonl " + dir +
                                 "/missing.warc.gz " + warc_of_first);
  INFO(bad.output);
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.output, Catch::Contains("crawler index: "));
  CHECK_THAT(bad.output, Catch::Contains("fetch-log.jsonl"));
  CHECK_THAT(bad.output, Catch::Contains("missing.warc.gz"));
  CHECK(ReadText(first) == written.begin()->second);
  fs::remove_all(dir);
}

// The sequence number of OUT's current checkpoint (0: none readable yet; a
// read racing the checkpoint's renames counts as none).
uint64_t CheckpointSequence(const std::string& out) {
  try {
    return engine::checkpoint_testing::Manifest(out + "/checkpoint")
        .at("sequence")
        .to_number<uint64_t>();
  } catch (const std::exception&) {
    return 0;
  }
}

TEST_CASE(
    "CLI: kill -USR1 writes a checkpoint now, mid-crawl, with a checkpoint interval of "
    "an hour; the crawl goes on and ends on SIGTERM with exit 0",
    "[engine][cli][checkpoint]") {
  std::string dir = TempDir("cli-usr1");
  // 2 hosts x ~300 pages at 0.05 s each: ~15 s of crawl, far more than the
  // test needs, ended by SIGTERM.
  TestSite site("--pages 600 --hosts 2", dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  const std::string out = dir + "/out";
  pid_t pid =
      testing::Spawn(kCrawler + " crawl --seeds " + dir + "/seeds.txt --out " + out +
                         " --set frontier.min_delay_s=0.05"
                         " --set checkpoint.interval_s=3600",
                     dir + "/crawler.out");
  testing::Reaper reap_pid(pid);
  // The crawl's first checkpoint (written as it starts), then pages fetched.
  const bool started = WaitFor(
      [&] {
        return CheckpointSequence(out) == 1 && fs::exists(out + "/fetch-log.jsonl") &&
               fs::file_size(out + "/fetch-log.jsonl") > 0;
      },
      60);
  INFO(ReadText(dir + "/crawler.out"));
  REQUIRE(started);
  REQUIRE(::kill(pid, SIGUSR1) == 0);
  REQUIRE(WaitFor([&] { return CheckpointSequence(out) >= 2; }, 60));
  // Taken mid-crawl: it records fetch-log lines, and the crawl was still
  // running after it (the process had not exited).
  const json::object m = engine::checkpoint_testing::Manifest(out + "/checkpoint");
  CHECK(m.at("sequence").to_number<uint64_t>() == 2);
  CHECK(m.at("fetch_log").at("bytes").to_number<uint64_t>() > 0);
  int status = 0;
  CHECK(::waitpid(pid, &status, WNOHANG) == 0);
  REQUIRE(::kill(pid, SIGTERM) == 0);
  CHECK(testing::WaitExitFor(pid, 120) == 0);
  // SIGTERM's own checkpoint follows.
  CHECK(CheckpointSequence(out) == 3);
  fs::remove_all(dir);
}

// A crawl that ends with losses (URLs no server answered for) exits 3 and
// names them in its summary, stats.json and the report; answers do not
// count (the site's /status/500, given up after its retries, is the
// server's word), and a clean crawl exits 0.
TEST_CASE(
    "CLI: a crawl ending with losses (a host that refuses connections) exits 3 and "
    "names them; a 5xx given up is no loss, exit 0",
    "[engine][cli]") {
  const std::string dir = TempDir("cli_losses");
  TestSite site("--pages 12 --hosts 1", dir + "/requests.log");
  const std::string fast =
      " --set frontier.min_delay_s=0 --set fetch.max_retries=1 --set "
      "fetch.retry_base_s=0.05";
  CrawlInto(site, dir, dir + "/clean", fast);
  const json::value clean = json::parse(ReadText(dir + "/clean/stats.json"));
  CHECK(clean.at("crawl").at("gave_up").to_number<uint64_t>() > 0);  // the 5xx
  CHECK(clean.at("crawl").at("lost").as_object().empty());

  testing::RefusedPort refused;
  const std::string dead = "http://127.0.0.1:" + std::to_string(refused.port()) + "/";
  site.WriteSeeds(dir + "/seeds.txt");
  std::ofstream(dir + "/seeds.txt", std::ios::app) << dead << "\n";
  CommandResult r = RunCommand(kCrawler + " crawl --seeds " + dir + "/seeds.txt --out " +
                               dir + "/lossy" + fast);
  INFO(r.output);
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.output, Catch::Contains("crawl done, with losses"));
  CHECK_THAT(r.output,
             Catch::Contains("lost (no server answered): 1 URLs (connect 1); 1 "
                             "hosts whose robots.txt had no answer (connect 1)"));
  const json::value lossy = json::parse(ReadText(dir + "/lossy/stats.json"));
  CHECK(lossy.at("crawl").at("lost").at("connect").to_number<uint64_t>() == 1);
  CHECK(lossy.at("crawl").at("lost_hosts").at("connect").to_number<uint64_t>() == 1);
  // Every page of the live host all the same.
  CHECK(lossy.at("crawl").at("fetched") == clean.at("crawl").at("fetched"));
  CommandResult report = RunCommand(kCrawler + " stats " + dir + "/lossy");
  CHECK_THAT(report.output, Catch::Contains("1 URLs no server answered for (connect 1)"));
  site.Stop();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace crawler::cli
