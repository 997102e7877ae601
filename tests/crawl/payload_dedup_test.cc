// Payloads stored once (dedup.payload, docs/formats.md): a 200 whose payload
// was archived already, under any URL, is a revisit record of that first
// capture. Real crawls of the testsite, whose pages load their stylesheet,
// images and icon under a query of their own (`--asset-query`), read back
// with warcio: every revisit names a response of the same payload, none a
// record that is not there, after a kill -9 and a resume too; and payloads
// of an earlier crawl (dedup.from) as revisits of its captures, and their
// 304s, when the crawl revisits, as revisits of the same captures.
#include <signal.h>
#include <sys/wait.h>

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
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

using testing::CommandResult;
using testing::RevisitProblem;
using testing::TempDir;
using testing::TestSite;
using testing::WarcRecord;

constexpr const char* kIdentical =
    "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest";
// 150 pages on 2 hosts, each loading 4 requisites of ~4 KB under ?v=PAGE.
constexpr const char* kSite =
    "--pages 150 --hosts 2 --assets --asset-bytes 4096 --asset-query";

// The crawls' flags: configs/archive.toml (dedup.payload on), no
// politeness delay, an exact filter, and `extra`.
std::string ArchiveSets(const std::string& extra) {
  return std::string("--config ") + CRAWLER_SOURCE_DIR +
         "/configs/archive.toml --set frontier.min_delay_s=0 " + extra + " " +
         engine::testsite_crawl::kExactDedup;
}

uint64_t Counter(const std::string& out, const char* name) {
  return testing::ReadStats(out).at("crawl").at(name).to_number<uint64_t>();
}

// The payload revisits among `records`: identical-payload-digest revisits
// (a crawl without [recrawl] writes no other revisit).
size_t PayloadRevisits(const std::vector<WarcRecord>& records) {
  size_t n = 0;
  for (const WarcRecord& r : records) n += r.type == "revisit" && r.profile == kIdentical;
  return n;
}

// What is wrong with a crawl's output against the truth set: a URL
// attempted twice, one not in the truth or not attempted, or a response
// whose archived records (response or revisit) are not as logged.
std::string NotAsTruth(const std::string& out, const std::set<std::string>& truth) {
  const std::multiset<std::string> attempted =
      testing::AttemptedUrls(out + "/fetch-log.jsonl");
  std::string wrong;
  for (const std::string& url : std::set<std::string>(attempted.begin(), attempted.end()))
    if (attempted.count(url) > 1 || truth.count(url) == 0) wrong += url + "\n";
  for (const std::string& url : truth)
    if (attempted.count(url) == 0) wrong += url + " not fetched\n";
  for (const std::string& url : testing::WarcNotAsLogged(out))
    wrong += url + " archived not as logged\n";
  return wrong;
}

// Payloads stored in more than one 200 response record ("" for none).
std::string StoredTwice(const std::vector<WarcRecord>& records) {
  std::map<std::string, std::vector<std::string>> by_digest;
  for (const WarcRecord& w : records)
    if (w.type == "response" && w.status == "200") by_digest[w.digest].push_back(w.uri);
  std::string twice;
  for (const auto& [digest, uris] : by_digest)
    if (uris.size() > 1) twice += digest + ": " + uris[0] + " and " + uris[1] + "\n";
  return twice;
}

TEST_CASE(
    "Payloads stored once: one payload under many URLs is one response, every other "
    "copy a revisit of it, below payload_min_bytes all are stored whole",
    "[engine][testsite][payload]") {
  const std::string dir = TempDir("payload-dedup");
  TestSite site(kSite, dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  const std::set<std::string> truth = site.Truth();
  // One worker (here and below): each response is written before the next
  // one is looked up, so no two workers archive one payload at once (that
  // race costs a second whole copy, never a wrong record), and "stored
  // once" is exact.
  const std::string sets = ArchiveSets("--set crawl.workers=1");
  const std::string out = dir + "/out";
  CommandResult r = engine::testsite_crawl::Crawl(
      dir + "/seeds.txt", out, sets + " --set dedup.payload_min_bytes=0");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::vector<WarcRecord> records = testing::WarcRecords(out);
  CHECK(NotAsTruth(out, truth) == "");
  CHECK(RevisitProblem(records, /*across_urls=*/true) == "");
  CHECK(StoredTwice(records) == "");
  // The page's requisites under other URLs are revisits: 3 of the 4 per page
  // at least (the 8 images are shared by the pages), counted as written.
  const size_t revisits = PayloadRevisits(records);
  INFO("payload revisits " << revisits << " of " << records.size() << " records");
  CHECK(revisits >= 3 * 100);
  CHECK(Counter(out, "payload_revisits") == revisits);
  CHECK(Counter(out, "payload_bytes_saved") >= revisits * 4000);
  CHECK(testing::CdxjNotAsWarcio(out).empty());
  CommandResult stats = testing::RunCommand(testing::kCrawler + " stats " + out);
  CHECK_THAT(stats.output, Catch::Contains("payloads stored once"));

  // A minimum above every payload: each is stored whole, nothing looked up.
  const std::string whole = dir + "/whole";
  r = engine::testsite_crawl::Crawl(dir + "/seeds.txt", whole,
                                    sets + " --set dedup.payload_min_bytes=1000000000");
  REQUIRE(r.exit_code == 0);
  const std::vector<WarcRecord> whole_records = testing::WarcRecords(whole);
  CHECK(NotAsTruth(whole, truth) == "");
  CHECK(PayloadRevisits(whole_records) == 0);
  CHECK(Counter(whole, "payload_revisits") == 0);
  site.Stop();
  std::filesystem::remove_all(dir);
}

// Run under TSan in CI (ctest label "concurrency", with the other
// [concurrency] cases of this binary): 4 workers and 2 connections per host
// look digests up and add captures at once. Two workers may both store a
// payload whole (docs/formats.md); no revisit may name a record that is not
// there or of another payload, and the counter must be what was written.
TEST_CASE(
    "Payloads stored once with four workers racing: every revisit names its payload",
    "[.][concurrency]") {
  const std::string dir = TempDir("payload-workers");
  TestSite site("--pages 120 --hosts 2 --assets --asset-bytes 2048 --asset-query",
                dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  const std::set<std::string> truth = site.Truth();
  const std::string out = dir + "/out";
  CommandResult r = engine::testsite_crawl::Crawl(
      dir + "/seeds.txt", out,
      ArchiveSets("--set crawl.workers=4 --set crawl.max_connections=16 "
                  "--set frontier.max_connections_per_host=2"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  site.Stop();
  const std::vector<WarcRecord> records = testing::WarcRecords(out);
  CHECK(NotAsTruth(out, truth) == "");
  CHECK(RevisitProblem(records, /*across_urls=*/true) == "");
  const size_t revisits = PayloadRevisits(records);
  CHECK(revisits >= 2 * 80);  // most of the 4 requisites of each page
  CHECK(Counter(out, "payload_revisits") == revisits);
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "Payloads stored once across a kill -9: the digests resume with the checkpoint, "
    "no revisit names a record the cut discarded, each URL archived once",
    "[engine][testsite][payload]") {
  const std::string dir = TempDir("payload-kill");
  TestSite site(std::string(kSite) + " --delay-ms 20", dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  const std::set<std::string> truth = site.Truth();
  const std::string out = dir + "/out";
  pid_t pid = testing::Spawn(
      testing::kCrawler + " crawl --seeds " + dir + "/seeds.txt --out " + out + " " +
          ArchiveSets("--set crawl.workers=1 --set dedup.payload_min_bytes=0 "
                      "--set checkpoint.interval_s=0.3"),
      dir + "/crawl.out");
  testing::Reaper reap(pid);
  // Killed once a checkpoint holds payload revisits, so the resumed crawl
  // both keeps digests from before the kill and loses some written after.
  REQUIRE(testing::WaitFor(
      [&] {
        boost::system::error_code ec;
        const boost::json::value m =
            boost::json::parse(testing::ReadText(out + "/checkpoint/MANIFEST.json"), ec);
        const boost::json::value* n =
            ec || !m.is_object()
                ? nullptr
                : m.at("counters").as_object().if_contains("payload_revisits");
        return n != nullptr && n->to_number<uint64_t>() > 0;
      },
      60));
  REQUIRE(::waitpid(pid, nullptr, WNOHANG) == 0);  // still crawling
  ::kill(pid, SIGKILL);
  testing::WaitExitFor(pid, 10);
  CommandResult resumed =
      testing::RunCommand(testing::kCrawler + " crawl --resume " + out);
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  site.Stop();
  const std::vector<WarcRecord> records = testing::WarcRecords(out);
  CHECK(NotAsTruth(out, truth) == "");
  CHECK(RevisitProblem(records, /*across_urls=*/true) == "");
  // The digests of the captures before the kill came back with the
  // checkpoint: none of those payloads was stored again after the resume.
  CHECK(StoredTwice(records) == "");
  const size_t revisits = PayloadRevisits(records);
  CHECK(revisits >= 3 * 100);
  CHECK(Counter(out, "payload_revisits") == revisits);
  std::filesystem::remove_all(dir);
}

// What is wrong with `second`'s revisits of `first`'s captures ("" for
// nothing): each names (by URI and date, no record id) a 200 response of
// `first` with its payload digest; and no 200 response of `second` stores a
// payload `first` has, of a page or a requisite (the payloads the testsite
// has of at least payload_min_bytes). Counts those revisits into *revisits.
std::string EarlierProblem(const std::vector<WarcRecord>& first,
                           const std::vector<WarcRecord>& second, size_t* revisits) {
  std::map<std::string, const WarcRecord*> by_uri_date;  // "URI DATE"
  std::set<std::string> digests;
  for (const WarcRecord& r : first) {
    if (r.type != "response" || r.status != "200") continue;
    by_uri_date[r.uri + " " + r.date.substr(0, 19)] = &r;
    digests.insert(r.digest);
  }
  *revisits = 0;
  for (const WarcRecord& r : second) {
    const std::string path = testing::Path(r.uri);
    const bool big =
        path == "/" || path.starts_with("/p/") || path.starts_with("/static/");
    if (r.type == "response" && r.status == "200" && big && digests.count(r.digest) > 0)
      return r.uri + ": stored again, a payload of the first crawl";
    if (r.type != "revisit") continue;
    auto it = by_uri_date.find(r.refers_to_uri + " " + r.refers_to_date.substr(0, 19));
    if (it == by_uri_date.end())
      return r.uri + ": refers to " + r.refers_to_uri + " at " + r.refers_to_date +
             ", no response of the first crawl";
    if (it->second->digest != r.digest || !r.refers_to.empty() || r.profile != kIdentical)
      return r.uri + ": digest " + r.digest + " against " + it->second->digest +
             ", WARC-Refers-To \"" + r.refers_to + "\", profile " + r.profile;
    ++*revisits;
  }
  return "";
}

// What is wrong with the 304s of a crawl that revisits (`records`; ""
// for nothing): each is a server-not-modified revisit naming, by URI and
// date, a 200 response of `captures` with its payload digest (the earlier
// crawl's capture, whose record id the crawl never knew, or its own), none a
// 304 response record. Counts them into *not_modified.
std::string NotModifiedProblem(const std::vector<WarcRecord>& captures,
                               const std::vector<WarcRecord>& records,
                               size_t* not_modified) {
  std::map<std::string, const WarcRecord*> by_uri_date;
  for (const WarcRecord& r : captures)
    if (r.type == "response" && r.status == "200")
      by_uri_date[r.uri + " " + r.date.substr(0, 19)] = &r;
  *not_modified = 0;
  for (const WarcRecord& r : records) {
    if (r.type == "response" && r.status == "304")
      return r.uri + ": a 304 response record";
    if (r.type != "revisit" || r.status != "304") continue;
    ++*not_modified;
    auto it = by_uri_date.find(r.refers_to_uri + " " + r.refers_to_date.substr(0, 19));
    if (it == by_uri_date.end() || it->second->digest != r.digest)
      return r.uri + ": a 304 referring to " + r.refers_to_uri + " at " +
             r.refers_to_date + ", no capture of that payload";
  }
  return "";
}

TEST_CASE(
    "Payloads of earlier crawls: with dedup.from naming the first crawl (its directory, "
    "its WACZ or a CDXJ), a second crawl writes its payloads as revisits of the first's "
    "captures, a source that is none of them is refused, named",
    "[engine][testsite][payload]") {
  const std::string dir = TempDir("payload-from");
  TestSite site("--pages 60 --hosts 1 --assets --asset-bytes 2048",
                dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  const std::string sets = ArchiveSets("");
  auto crawl = [&](const std::string& out, const std::string& extra) {
    CommandResult r =
        engine::testsite_crawl::Crawl(dir + "/seeds.txt", out, sets + " " + extra);
    INFO(out << ": " << r.output);
    REQUIRE(r.exit_code == 0);
    return testing::WarcRecords(out);
  };
  const std::string first = dir + "/first";
  const std::vector<WarcRecord> first_records = crawl(first, "");
  CommandResult pack = testing::RunCommand(testing::kCrawler + " wacz " + first + " -o " +
                                           dir + "/first.wacz");
  REQUIRE(pack.exit_code == 0);
  // The same WACZ with its index as other tools write it: index.cdx.gz, in
  // two gzip members (a ZipNum index's blocks), made by Python's zipfile.
  std::ofstream(dir + "/gz.py")
      << "import gzip, sys, zipfile\n"
         "src, dst = zipfile.ZipFile(sys.argv[1]), zipfile.ZipFile(sys.argv[2], 'w')\n"
         "for i in src.infolist():\n"
         "    if i.filename != 'indexes/index.cdx':\n"
         "        dst.writestr(i, src.read(i.filename))\n"
         "lines = src.read('indexes/index.cdx').splitlines(keepends=True)\n"
         "half = len(lines) // 2\n"
         "dst.writestr('indexes/index.cdx.gz', gzip.compress(b''.join(lines[:half])) +\n"
         "             gzip.compress(b''.join(lines[half:])))\n"
         "dst.close()\n";
  CommandResult gz = testing::RunCommand("python3 " + dir + "/gz.py " + dir +
                                         "/first.wacz " + dir + "/first-gz.wacz");
  INFO(gz.output);
  REQUIRE(gz.exit_code == 0);
  // Each source form: the directory, the WACZ (index.cdx, index.cdx.gz), one
  // CDXJ file.
  for (const std::string& source : {first, dir + "/first.wacz", dir + "/first-gz.wacz",
                                    first + "/warc/crawl-00000.cdxj"}) {
    const std::string second = dir + "/second";
    std::filesystem::remove_all(second);
    const std::vector<WarcRecord> records =
        crawl(second, "--set 'dedup.from=[\"" + source + "\"]'");
    size_t revisits = 0;
    INFO("dedup.from = " << source);
    CHECK(EarlierProblem(first_records, records, &revisits) == "");
    // The site has not changed: every HTML page and requisite of at least
    // 512 B (all but robots.txt and a few small special pages).
    CHECK(revisits >= 60 + 20);
    CHECK(Counter(second, "payload_revisits") == PayloadRevisits(records));
    CHECK(testing::CdxjNotAsWarcio(second).empty());
  }
  // With [recrawl] as well: a page first written as a revisit of the first
  // crawl's capture is revisited, and its 304s are revisit records of that
  // capture too, never a 304 response (which no viewer replays).
  // It stops after 150 fetches more than the first crawl made (each URL
  // revisited once or more), not after a time: an ASan run's 6 s ended
  // before any revisit.
  const std::string again = dir + "/again";
  const size_t fetched = testing::AttemptedUrls(first + "/fetch-log.jsonl").size();
  const std::vector<WarcRecord> revisited =
      crawl(again, "--set 'dedup.from=[\"" + first +
                       "\"]' --set recrawl.enabled=true --set recrawl.interval_s=1 "
                       "--set recrawl.min_interval_s=1 --set recrawl.max_interval_s=2 "
                       "--set crawl.max_duration_s=120 --set crawl.max_pages=" +
                       std::to_string(fetched + 150));
  std::vector<WarcRecord> captures = first_records;
  captures.insert(captures.end(), revisited.begin(), revisited.end());
  size_t not_modified = 0;
  CHECK(NotModifiedProblem(captures, revisited, &not_modified) == "");
  CHECK(not_modified >= 60);  // each page at least once
  // Some of them refer to the first crawl: those pages were never stored here.
  size_t to_first = 0;
  for (const WarcRecord& r : revisited)
    to_first += r.type == "revisit" && r.status == "304" && r.refers_to.empty();
  CHECK(to_first >= 60);
  // Refused, named: a path that is no index; dedup.from without dedup.payload.
  for (const auto& [extra, words] :
       {std::pair<std::string, std::string>{
            "--set 'dedup.from=[\"" + dir + "/seeds.txt\"]'",
            dir + "/seeds.txt: not a crawl's output"},
        {"--set dedup.payload=false --set 'dedup.from=[\"" + first + "\"]'",
         "dedup.from: needs dedup.payload = true"}}) {
    CommandResult r = engine::testsite_crawl::Crawl(dir + "/seeds.txt", dir + "/refused",
                                                    sets + " " + extra);
    INFO(r.output);
    CHECK(r.exit_code != 0);
    CHECK_THAT(r.output, Catch::Contains(words));
    std::filesystem::remove_all(dir + "/refused");
  }
  site.Stop();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace crawler::crawl
