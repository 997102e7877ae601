// Checkpointer under stress, with the real binary against crawler-testsite:
// a checkpoint cut (gate close + fork) as often as the Run thread can take
// one, on a politeness-bound crawl where idle workers keep polling the
// frontier. The forked writer takes the frontier's, the filter's and the host
// table's locks; if any worker could hold one of them outside the gate at a
// fork, the child would hang and, with it, every later checkpoint and the
// end of the crawl (a hang seen once). The crawl must finish
// with hundreds of checkpoints and the exact truth set.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "crawl_output.h"
#include "run_command.h"
#include "testsite_process.h"

namespace crawler::checkpoint {
namespace {

namespace fs = std::filesystem;
using testing::ReadText;
using testing::TempDir;
using testing::TestSite;

using testing::kCrawler;

TEST_CASE(
    "Checkpoint stress: a cut every few ms on a politeness-bound crawl, and the crawl "
    "still ends",
    "[checkpoint][stress]") {
  std::string dir = TempDir("ckpt-stress");
  TestSite site("--pages 1200 --hosts 4", dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  std::set<std::string> truth = site.Truth();
  std::string out = dir + "/out";
  // interval_s = 0.001: a new cut as soon as the last writer is reaped (the
  // Run thread looks every 20 ms). Politeness 0.03 s on 4 hosts keeps the
  // workers idle most of the time, polling the frontier between fetches.
  pid_t pid = testing::Spawn(
      kCrawler + " crawl --seeds " + dir + "/seeds.txt --out " + out +
          " --set frontier.min_delay_s=0.03 --set checkpoint.interval_s=0.001"
          " --set crawl.workers=2 --set dedup.capacity=500 --set dedup.error_rate=1e-7",
      dir + "/crawler.out");
  testing::Reaper reap_pid(pid);
  int code = testing::WaitExitFor(pid, 300);
  INFO(ReadText(dir + "/crawler.out"));
  REQUIRE(code != -2);  // -2: still running after 300 s (a hung checkpoint writer)
  REQUIRE(code == 0);

  // The checkpointer's own counts (stats.json "checkpoint"), not its log
  // lines. How many cuts a run gets depends on the machine's speed (957 in
  // one Release run alone, printed below), so the check is that it was cut again and
  // again while it ran (the crawl lasts >= 9 s of politeness), and that no cut failed.
  const auto figures = testing::ReadStats(out).at("checkpoint").as_object();
  const uint64_t written = figures.at("written").to_number<uint64_t>();
  WARN("checkpoints written: " << written);
  CHECK(written >= 10);
  CHECK(figures.at("failed").to_number<uint64_t>() == 0);

  std::multiset<std::string> attempted = testing::AttemptedUrls(out + "/fetch-log.jsonl");
  CHECK(std::set<std::string>(attempted.begin(), attempted.end()) == truth);
  CHECK(attempted.size() == truth.size());
  site.Stop();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace crawler::checkpoint
