// Checkpoints, resume and the stats report, with the real `crawler` binary
// against the real crawler-testsite (separate processes, 127.0.0.1 only):
//   - crash torture: checkpoint_torture_test.cc;
//   - damage: each checkpoint file flipped or truncated -> resume falls back
//     to checkpoint.prev/ with a warning naming the file; both damaged ->
//     exit 2, nothing changed;
//   - immutability: one checkpoint resumed twice fetches the same URLs in
//     the same order;
//   - graceful stop: SIGTERM -> exit 0, a fresh checkpoint, resumable;
//   - stats: text/JSON match the fetch log; the HTML renders in Chromium.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "checkpoint_helpers.h"
#include "crawl_output.h"
#include "png_ink.h"
#include "run_command.h"
#include "testsite_process.h"

namespace crawler::checkpoint {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using testing::Attempted;
using testing::CommandResult;
using testing::LogLine;
using testing::Path;
using testing::ReadFetchLog;
using testing::ReadText;
using testing::RunCommand;
using testing::ServedRequest;
using testing::Spawn;
using testing::TempDir;
using testing::TestSite;
using testing::WaitExit;
using testing::WarcResponses;

using engine::checkpoint_testing::CheckpointLogBytes;
using engine::checkpoint_testing::Distinct;
using engine::checkpoint_testing::FlipByte;
using engine::checkpoint_testing::kCrawler;
using engine::checkpoint_testing::kExactDedup;
using engine::checkpoint_testing::Manifest;
using engine::checkpoint_testing::PageLinesAfter;
using engine::checkpoint_testing::Restore;
using engine::checkpoint_testing::Truncate;

// A crawl stopped by max_pages with checkpoint/ and checkpoint.prev/.
struct StoppedCrawl {
  std::string dir, out, pristine;
  std::unique_ptr<TestSite> site;
  explicit StoppedCrawl(const std::string& name, const std::string& extra = "",
                        const std::string& site_args = "--pages 1500 --hosts 2") {
    dir = TempDir(name);
    site = std::make_unique<TestSite>(site_args, dir + "/requests.log");
    site->WriteSeeds(dir + "/seeds.txt");
    out = dir + "/out";
    CommandResult r =
        RunCommand(kCrawler + " crawl --seeds " + dir + "/seeds.txt --out " + out +
                   " --set frontier.min_delay_s=0 --set crawl.max_pages=300"
                   " --set checkpoint.interval_pages=100" +
                   kExactDedup + extra);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    REQUIRE(fs::exists(out + "/checkpoint/MANIFEST.json"));
    REQUIRE(fs::exists(out + "/checkpoint.prev/MANIFEST.json"));
    pristine = dir + "/pristine";
    Restore(out, pristine);
  }
  ~StoppedCrawl() {
    site->Stop();
    fs::remove_all(dir);
  }
};

TEST_CASE(
    "Damage: each checkpoint file flipped or cut -> checkpoint.prev or exit 2, never a "
    "wrong state",
    "[checkpoint][damage]") {
  StoppedCrawl c("damage");
  for (const char* file : {"MANIFEST.json", "config.toml", "dedup.bin", "frontier.bin"}) {
    for (bool flip : {true, false}) {
      INFO(file << (flip ? " flipped" : " truncated"));
      // The newest damaged: resume warns, names the file, uses checkpoint.prev.
      Restore(c.pristine, c.out);
      std::string target = c.out + "/checkpoint/" + file;
      flip ? FlipByte(target) : Truncate(target);
      CommandResult r = RunCommand(kCrawler + " crawl --resume " + c.out +
                                   " --set crawl.max_pages=360");
      INFO(r.output);
      CHECK(r.exit_code == 0);
      CHECK(r.output.find("warning") != std::string::npos);
      CHECK(r.output.find(std::string("checkpoint/") + file) != std::string::npos);
      CHECK(r.output.find("checkpoint.prev") != std::string::npos);
      bool twice = true;
      std::set<std::string> fetched =
          Distinct(ReadFetchLog(c.out + "/fetch-log.jsonl"), &twice);
      CHECK_FALSE(twice);
      CHECK(fetched.size() >= 300);

      // Both damaged: exit 2, one message naming the file, OUT untouched.
      Restore(c.pristine, c.out);
      flip ? FlipByte(target) : Truncate(target);
      std::string prev = c.out + "/checkpoint.prev/" + file;
      flip ? FlipByte(prev) : Truncate(prev);
      auto log_size = fs::file_size(c.out + "/fetch-log.jsonl");
      r = RunCommand(kCrawler + " crawl --resume " + c.out);
      INFO(r.output);
      CHECK(r.exit_code == 2);
      CHECK(r.output.find(std::string("checkpoint.prev/") + file) != std::string::npos);
      CHECK(fs::file_size(c.out + "/fetch-log.jsonl") == log_size);
    }
  }
  // A publish cut between its two exchanges (checkpoint.cc: Publish) leaves
  // checkpoint/ one older than checkpoint.prev/: resume swaps them back and
  // carries on from the newer.
  Restore(c.pristine, c.out);
  const uint64_t newest =
      Manifest(c.out + "/checkpoint").at("sequence").to_number<uint64_t>();
  fs::rename(c.out + "/checkpoint", c.out + "/swap");
  fs::rename(c.out + "/checkpoint.prev", c.out + "/checkpoint");
  fs::rename(c.out + "/swap", c.out + "/checkpoint.prev");
  {
    CommandResult r =
        RunCommand(kCrawler + " crawl --resume " + c.out + " --set crawl.max_pages=360");
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(ReadText(c.out + "/crawler.log").find("swapped them back") !=
          std::string::npos);
    CHECK(ReadText(c.out + "/crawler.log")
              .find("/checkpoint (checkpoint " + std::to_string(newest) + ")") !=
          std::string::npos);
    bool twice = true;
    std::set<std::string> fetched =
        Distinct(ReadFetchLog(c.out + "/fetch-log.jsonl"), &twice);
    CHECK_FALSE(twice);
    CHECK(fetched.size() > 300);
  }
  // Missing, foreign or not a crawl: exit 2 with a message.
  CommandResult r = RunCommand(kCrawler + " crawl --resume " + c.dir + "/nowhere");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("no such directory") != std::string::npos);
  fs::create_directories(c.dir + "/foreign/checkpoint");
  std::ofstream(c.dir + "/foreign/checkpoint/MANIFEST.json")
      << "{\"format\":\"something else\"}\n";
  r = RunCommand(kCrawler + " crawl --resume " + c.dir + "/foreign");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("MANIFEST.json") != std::string::npos);
  // Only limits may change on resume.
  Restore(c.pristine, c.out);
  r = RunCommand(kCrawler + " crawl --resume " + c.out + " --set dedup.type=cuckoo");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("dedup.type cannot be changed on --resume") != std::string::npos);
  // A fresh crawl into a directory that holds one is refused.
  r = RunCommand(kCrawler + " crawl --seeds " + c.dir + "/seeds.txt --out " + c.out);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("already holds a crawl") != std::string::npos);
}

TEST_CASE(
    "Spilled frontier URLs: the checkpoint keeps the spill files and their ranges, "
    "resume adopts them; a damaged one falls back to checkpoint.prev, named",
    "[checkpoint][spill]") {
  // 50 URLs in RAM: most of the ~9,000 URLs 300 pages discover are spilled.
  StoppedCrawl c("spill", " --set frontier.max_memory_urls=50",
                 "--pages 20000 --hosts 2");
  const std::string cp = c.out + "/checkpoint";
  json::object files = Manifest(cp).at("files").as_object();
  std::vector<std::string> spills;
  for (const auto& [name, entry] : files) {
    if (std::string(name).rfind("spill-", 0) != 0) continue;
    spills.push_back(std::string(name));
    CHECK(fs::exists(cp + "/" + spills.back()));
    CHECK(entry.as_object().at("bytes").to_number<uint64_t>() > 0);
  }
  REQUIRE_FALSE(spills.empty());
  json::object frontier = Manifest(cp).at("stats").at("frontier").as_object();
  uint64_t queued = frontier.at("queued_memory").to_number<uint64_t>() +
                    frontier.at("queued_disk").to_number<uint64_t>() +
                    frontier.at("in_flight").to_number<uint64_t>();
  CHECK(frontier.at("queued_disk").to_number<uint64_t>() > 0);

  // Resumed: every queued URL is still there (adopted, not listed URL by URL).
  CommandResult r =
      RunCommand(kCrawler + " crawl --resume " + c.out + " --set crawl.max_pages=360");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(ReadText(c.out + "/crawler.log")
            .find(" " + std::to_string(queued) + " URLs queued") != std::string::npos);
  bool twice = true;
  const size_t before =
      Distinct(ReadFetchLog(c.pristine + "/fetch-log.jsonl"), &twice).size();
  std::set<std::string> fetched =
      Distinct(ReadFetchLog(c.out + "/fetch-log.jsonl"), &twice);
  CHECK_FALSE(twice);
  CHECK(fetched.size() > before);

  // One spill file of the newest checkpoint damaged (a copy with a byte
  // flipped: its own inode, so checkpoint.prev keeps a good one).
  Restore(c.pristine, c.out);
  const std::string victim = cp + "/" + spills[0];
  std::string bytes = ReadText(victim);
  json::object entry = Manifest(cp).at("files").at(spills[0]).as_object();
  uint64_t from = entry.at("from").to_number<uint64_t>(),
           n = entry.at("bytes").to_number<uint64_t>();
  bytes[from + n / 2] ^= 0x20;
  fs::remove(victim);
  std::ofstream(victim, std::ios::binary) << bytes;
  r = RunCommand(kCrawler + " crawl --resume " + c.out + " --set crawl.max_pages=360");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("checkpoint/" + spills[0] + ": checksum mismatch") !=
        std::string::npos);
  CHECK(r.output.find("checkpoint.prev") != std::string::npos);
  fetched = Distinct(ReadFetchLog(c.out + "/fetch-log.jsonl"), &twice);
  CHECK_FALSE(twice);
  CHECK(fetched.size() > before);
}

TEST_CASE("A damaged or short dedup hash log: resume warns, names it, loses nothing",
          "[checkpoint][compaction]") {
  StoppedCrawl c("hlog");
  for (bool flip : {true, false}) {
    INFO((flip ? "flipped" : "truncated"));
    Restore(c.pristine, c.out);
    const std::string target = c.out + "/dedup/stripe-00003.hlog";
    REQUIRE(fs::file_size(target) > 64);
    CHECK(Manifest(c.out + "/checkpoint").at("dedup_log").at("bytes").as_array().size() ==
          16);
    if (flip) {
      // A byte of the first block's frame (a flipped entry is caught by the
      // compaction that reads it: dedup_test "A damaged or short log*").
      std::fstream io(target, std::ios::in | std::ios::out | std::ios::binary);
      io.seekp(33);
      io.put('#');
    } else {
      Truncate(target);
    }
    CommandResult r =
        RunCommand(kCrawler + " crawl --resume " + c.out + " --set crawl.max_pages=360");
    INFO(r.output);
    CHECK(r.exit_code == 0);
    // The warning is in the crawl's log (main prints only what stops a crawl).
    const std::string log = ReadText(c.out + "/crawler.log");
    INFO(log);
    CHECK(log.find("1 of 16 dedup stripes have no usable hash log") != std::string::npos);
    CHECK(log.find("stripe-00003.hlog") != std::string::npos);
    // The checkpoint recorded each log's length, so the resume cut the logs
    // without reading them: a short one is measured against that length.
    if (!flip) CHECK(log.find("the checkpoint recorded") != std::string::npos);
    bool twice = true;
    std::set<std::string> fetched =
        Distinct(ReadFetchLog(c.out + "/fetch-log.jsonl"), &twice);
    CHECK_FALSE(twice);
    CHECK(fetched.size() >= 300);
  }
}

TEST_CASE(
    "Immutability: one checkpoint resumed twice fetches the same first 100 URLs in the "
    "same order",
    "[checkpoint][immutable]") {
  // Hosts take turns (most_work_first off): with most work first, which of
  // two hosts goes next weighs their measured response times, so two
  // resumes could differ by timing alone; the order is here to show the
  // checkpoint unchanged by a resume.
  StoppedCrawl c("immutable",
                 " --set crawl.workers=1 --set crawl.max_connections=1"
                 " --set frontier.most_work_first=false");
  uint64_t cut = Manifest(c.out + "/checkpoint")
                     .at("fetch_log")
                     .as_object()
                     .at("bytes")
                     .to_number<uint64_t>();
  std::vector<std::vector<std::string>> runs;
  for (const char* copy : {"/a", "/b"}) {
    std::string out = c.dir + copy;
    Restore(c.pristine, out);
    CommandResult r =
        RunCommand(kCrawler + " crawl --resume " + out + " --set crawl.max_pages=420");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    std::istringstream in(ReadText(out + "/fetch-log.jsonl").substr(cut));
    std::vector<std::string> urls;
    for (std::string line; std::getline(in, line) && urls.size() < 100;) {
      urls.push_back(json::parse(line).as_object().at("url").as_string().c_str());
    }
    runs.push_back(urls);
  }
  CHECK(runs[0].size() == 100);
  CHECK(runs[0] == runs[1]);
}

TEST_CASE(
    "Graceful stop and the stats report: SIGTERM -> exit 0 + fresh checkpoint; stats "
    "match the log",
    "[.][checkpoint][graceful]") {
  std::string dir = TempDir("graceful");
  TestSite site("--pages 1200 --hosts 2", dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  std::set<std::string> truth = site.Truth();
  std::string out = dir + "/out";
  pid_t pid =
      Spawn(kCrawler + " crawl --seeds " + dir + "/seeds.txt --out " + out +
                " --set frontier.min_delay_s=0.005 --set checkpoint.interval_s=0.5" +
                kExactDedup,
            dir + "/crawler.out");
  testing::Reaper reap_pid(pid);
  // Mid-crawl: a periodic checkpoint written and 100 pages fetched (of 1,200).
  REQUIRE(testing::WaitFor(
      [&] {
        return fs::exists(out + "/checkpoint/MANIFEST.json") &&
               testing::AttemptedUrls(out + "/fetch-log.jsonl").size() >= 100;
      },
      60));
  double signalled =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  ::kill(pid, SIGTERM);
  int code = WaitExit(pid);
  INFO(ReadText(dir + "/crawler.out"));
  REQUIRE(code == 0);
  json::object m = Manifest(out + "/checkpoint");
  CHECK(m.at("created_unix").to_number<double>() >= signalled);
  CHECK(ReadText(dir + "/crawler.out").find("crawl stopped") != std::string::npos);

  CommandResult r = RunCommand(kCrawler + " crawl --resume " + out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  bool twice = true;
  std::vector<LogLine> log = ReadFetchLog(out + "/fetch-log.jsonl");
  CHECK(Distinct(log, &twice) == truth);
  CHECK_FALSE(twice);

  // Stats: --json has the documented fields and agrees with the fetch log.
  r = RunCommand(kCrawler + " stats " + out + " --json");
  REQUIRE(r.exit_code == 0);
  json::object s = json::parse(r.output).as_object();
  const std::map<std::string, std::vector<std::string>> fields = {
      {"dedup",
       {"variant",
        "stripes",
        "layers_min",
        "layers_max",
        "items",
        "capacity",
        "bytes",
        "bits_per_item",
        "fill",
        "estimated_fpr",
        "fpr_bound",
        "inserts_new",
        "inserts_duplicate",
        "duplicate_rate",
        "expected_false_seen",
        "relocations",
        "saturations",
        "compactions",
        "compaction_s",
        "logged_stripes",
        "fullest_stripes"}},
      {"frontier",
       {"queued_memory", "queued_disk", "in_flight", "hosts", "hosts_ready",
        "hosts_waiting_politeness", "hosts_waiting_robots", "hosts_blocked_robots",
        "depths"}},
      {"crawl",
       {"fetched", "failed", "status_2xx", "status_3xx", "status_4xx", "status_5xx",
        "bytes", "errors", "robots_blocked", "out_of_scope", "trap_guard", "retries",
        "gave_up", "pages_per_s", "pages_per_s_last_minute", "elapsed_s", "top_hosts"}},
      {"checkpoint",
       {"written", "last_pause_ms", "max_pause_ms", "last_write_s", "last_bytes"}}};
  for (const auto& [section, keys] : fields) {
    REQUIRE(s.contains(section));
    for (const std::string& k : keys) {
      INFO(section << "." << k);
      CHECK(s.at(section).as_object().contains(k));
    }
  }
  uint64_t fetched = 0, failed = 0, robots = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0;
  uint64_t retries = 0;
  for (const LogLine& l : log) {
    if (!l.final) {  // an attempt fetched again: a retry, not a page
      ++retries;
      continue;
    }
    if (l.status > 0)
      ++fetched;
    else if (l.error == "robots")
      ++robots;
    else if (Attempted(l))
      ++failed;
    s2 += l.status / 100 == 2;
    s3 += l.status / 100 == 3;
    s4 += l.status / 100 == 4;
    s5 += l.status / 100 == 5;
  }
  const json::object& c = s.at("crawl").as_object();
  auto n = [&](const char* k) { return c.at(k).to_number<uint64_t>(); };
  CHECK(n("fetched") == fetched);
  CHECK(n("retries") == retries);
  CHECK(retries > 0);  // /status/500 and /bad
  CHECK(n("failed") == failed);
  CHECK(n("robots_blocked") == robots);
  CHECK(n("status_2xx") == s2);
  CHECK(n("status_3xx") == s3);
  CHECK(n("status_4xx") == s4);
  CHECK(n("status_5xx") == s5);
  CHECK(s.at("dedup").as_object().at("items").to_number<uint64_t>() >= truth.size());
  CHECK(s.at("running").as_bool() == false);

  // The text report: its sections, and the same fetched count.
  r = RunCommand(kCrawler + " stats " + out);
  REQUIRE(r.exit_code == 0);
  for (const char* section : {"\nDedup\n", "\nFrontier\n", "\nCrawl\n", "estimated FPR",
                              "wrong \"seen\" (expected)", "pages lost"}) {
    CHECK(r.output.find(section) != std::string::npos);
  }

  // The HTML page renders in headless Chromium to a non-blank screenshot.
  std::string html = dir + "/report.html", png = dir + "/report.png";
  r = RunCommand(kCrawler + " stats " + out + " --html " + html);
  REQUIRE(r.exit_code == 0);
  std::string page = ReadText(html);
  CHECK(page.find("<svg") != std::string::npos);
  CHECK(page.find("<link") == std::string::npos);  // self-contained: no external assets
  CHECK(page.find(" src=") == std::string::npos);
  r = RunCommand(
      "chromium --headless --no-sandbox --disable-gpu --hide-scrollbars "
      "--window-size=1000,1400 "
      "--screenshot=" +
      png + " file://" + html);
  INFO(r.output);
  REQUIRE(fs::exists(png));
  double ink = testing::InkShare(ReadText(png));
  INFO("non-white share " << ink);
  CHECK(ink > 0.01);
  CHECK(ink < 0.9);
  site.Stop();
  fs::remove_all(dir);
}

TEST_CASE(
    "kill -9 before the first checkpoint: --resume starts the crawl again from its "
    "seeds",
    "[checkpoint]") {
  std::string dir = TempDir("before-first");
  TestSite site("--pages 300 --hosts 2", dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  std::set<std::string> truth = site.Truth();
  std::string out = dir + "/out";
  // Each checkpoint file takes 2 s to write: the kill lands inside checkpoint 1.
  pid_t pid =
      Spawn("env CRAWLER_CHECKPOINT_SLOW_MS=2000 " + kCrawler + " crawl --seeds " + dir +
                "/seeds.txt --out " + out + " --set frontier.min_delay_s=0" + kExactDedup,
            dir + "/crawler.out");
  testing::Reaper reap_pid(pid);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(out + "/checkpoint.tmp") &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  REQUIRE(fs::exists(out + "/checkpoint.tmp"));
  ::kill(pid, SIGKILL);
  WaitExit(pid);
  REQUIRE_FALSE(fs::exists(out + "/checkpoint"));
  CHECK(ReadFetchLog(out + "/fetch-log.jsonl").empty());

  CommandResult r = RunCommand(kCrawler + " crawl --resume " + out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("holds no checkpoint yet") != std::string::npos);
  bool twice = true;
  CHECK(Distinct(ReadFetchLog(out + "/fetch-log.jsonl"), &twice) == truth);
  CHECK_FALSE(twice);
  site.Stop();

  // A directory that never held a crawl is still refused, naming what is missing.
  std::string empty = dir + "/empty";
  fs::create_directories(empty);
  r = RunCommand(kCrawler + " crawl --resume " + empty);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("not a crawl output directory") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("crawler stats on a directory without a crawl exits 2", "[checkpoint]") {
  std::string dir = TempDir("nostats");
  CommandResult r = RunCommand(kCrawler + " stats " + dir);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("no stats.json and no readable checkpoint") != std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace crawler::checkpoint
