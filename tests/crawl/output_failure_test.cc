// Output failures, with the real binary against crawler-testsite: the crawl
// writes into a small tmpfs that fills up. A failed write of any output (fetch
// log, WARC, stats, checkpoint) must stop the crawl with exit 1 and one
// message naming the file; an I/O error during --resume exits 1 (not 2, which
// means bad input); and the last good checkpoint must still resume once there
// is room again, ending with the exact truth set and no URL twice.
//
// Needs root (mount -t tmpfs), as CI and the developers' machines have; the
// test says so and fails elsewhere rather than pass without checking.
#include <sys/mount.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "crawl_output.h"
#include "run_command.h"
#include "testsite_process.h"

namespace crawler::crawl {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::RunCommand;
using testing::TempDir;
using testing::TestSite;

using testing::kCrawler;

// A tmpfs of `size` at `dir`, unmounted on destruction.
class SmallDisk {
 public:
  SmallDisk(const std::string& dir, const std::string& size) : dir_(dir) {
    fs::create_directories(dir);
    mounted_ = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
  }
  ~SmallDisk() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  bool Remount(const std::string& options) {
    return ::mount("tmpfs", dir_.c_str(), "tmpfs",
                   MS_REMOUNT | (options == "ro" ? MS_RDONLY : 0),
                   options == "ro" ? nullptr : options.c_str()) == 0;
  }

 private:
  std::string dir_;
  bool mounted_ = false;
};

// What every case here shares: a testsite and its truth set, a small tmpfs
// under DIR/disk (mounting needs root: the case says so and fails elsewhere),
// the crawl command and the end check.
struct FullDisk {
  FullDisk(const std::string& name, const std::string& site_args,
           const std::string& disk_size)
      : dir(TempDir(name)),
        site(site_args, dir + "/requests.log"),
        disk(dir + "/disk", disk_size) {
    site.WriteSeeds(dir + "/seeds.txt");
    truth = site.Truth();
    INFO("mounting a tmpfs needs root (CI runs as root)");
    REQUIRE(disk.mounted());
  }
  // A crawl of the seeds into `out`, no politeness, a checkpoint every 100
  // pages, plus `extra` flags.
  std::string Crawl(const std::string& out, const std::string& extra) const {
    return kCrawler + " crawl --seeds " + dir + "/seeds.txt --out " + out +
           " --set frontier.min_delay_s=0 --set checkpoint.interval_pages=100" + extra;
  }
  // After the last run: every truth-set URL attempted, each once.
  void CheckEachOnce(const std::string& out) const {
    std::multiset<std::string> attempted =
        testing::AttemptedUrls(out + "/fetch-log.jsonl");
    CHECK(std::set<std::string>(attempted.begin(), attempted.end()) == truth);
    CHECK(attempted.size() == truth.size());
  }

  std::string dir;
  TestSite site;
  SmallDisk disk;
  std::set<std::string> truth;
};

TEST_CASE(
    "Full disk: the crawl stops with exit 1 naming the file; the last checkpoint resumes",
    "[output][fulldisk]") {
  FullDisk f("fulldisk", "--pages 3000 --hosts 2", "2m");
  SmallDisk& disk = f.disk;
  std::string out = f.dir + "/disk/out";
  // ~3,000 pages of WARC (~4 MB) cannot fit in 2 MB.
  CommandResult r =
      RunCommand(f.Crawl(out,
                         " --set dedup.capacity=500 --set dedup.error_rate=1e-7 --set "
                         "output.warc_gzip_level=1"));
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("No space left on device") != std::string::npos);
  CHECK(r.output.find(out + "/") != std::string::npos);  // names the file
  // One message: the error is printed once on stderr.
  size_t first = r.output.find("No space left on device");
  CHECK(r.output.find("No space left on device", first + 1) == std::string::npos);
  REQUIRE(fs::exists(out + "/checkpoint/MANIFEST.json"));

  // An I/O error during --resume (a read-only disk) exits 1 and names a file.
  REQUIRE(disk.Remount("ro"));
  r = RunCommand(kCrawler + " crawl --resume " + out);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("Read-only file system") != std::string::npos);

  // Room again: the last good checkpoint resumes and the crawl completes.
  REQUIRE(disk.Remount("size=256m"));
  r = RunCommand(kCrawler + " crawl --resume " + out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  f.CheckEachOnce(out);
  std::vector<std::string> wrong = testing::WarcNotAsLogged(out);
  INFO((wrong.empty() ? "" : "WARC differs from the log at " + wrong[0]));
  CHECK(wrong.empty());
  f.site.Stop();
}

TEST_CASE(
    "Full disk under the fetch log alone: no line is lost silently (exit 1 naming the "
    "log)",
    "[output][fulldisk]") {
  FullDisk f("fulllog", "--pages 2000 --hosts 2", "64k");
  const std::string& dir = f.dir;
  // OUT has room; its fetch log is a link to a file on the small disk, so
  // the log is the one output that fails (WARC writes go on succeeding).
  std::string out = dir + "/out";
  fs::create_directories(out);
  fs::create_symlink(dir + "/disk/fetch-log.jsonl", out + "/fetch-log.jsonl");
  CommandResult r =
      RunCommand(f.Crawl(out, " --set dedup.capacity=500 --set dedup.error_rate=1e-7"));
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find(out + "/fetch-log.jsonl: write: No space left on device") !=
        std::string::npos);

  REQUIRE(f.disk.Remount("size=64m"));
  r = RunCommand(kCrawler + " crawl --resume " + out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  f.CheckEachOnce(out);
  f.site.Stop();
}

TEST_CASE(
    "Full disk under the dedup hash log alone: the crawl goes on, warns naming the log, "
    "loses nothing",
    "[output][fulldisk][compaction]") {
  FullDisk f("fullhlog", "--pages 1500 --hosts 2", "8k");
  const std::string& dir = f.dir;
  // OUT has room; its hash-log directory is a link to the small disk. One
  // stripe, so its log outgrows 8 KB (~500 URLs) long before the crawl ends;
  // capacity 300, so compactions fall due and read the failed log.
  std::string out = dir + "/out";
  fs::create_directories(out);
  fs::create_directory_symlink(dir + "/disk", out + "/dedup");
  CommandResult r = RunCommand(f.Crawl(out,
                                       " --set dedup.stripes=1 --set dedup.capacity=300"
                                       " --set dedup.error_rate=1e-7"));
  INFO(r.output);
  // The log is the filter's helper, not the crawl's output: losing it costs
  // compaction (the chain stays as grown), not the crawl.
  CHECK(r.exit_code == 0);
  const std::string log = testing::ReadText(out + "/crawler.log");
  INFO(log);
  CHECK(log.find("dedup compaction stopped for one stripe: " + out +
                 "/dedup/stripe-00000.hlog: write: No space left on device") !=
        std::string::npos);
  f.CheckEachOnce(out);
  f.site.Stop();
}

}  // namespace
}  // namespace crawler::crawl
