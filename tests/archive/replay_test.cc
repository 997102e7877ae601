// Archives that archivists' tools open: a crawl of the
// testsite's pages with their requisites (stylesheets that @import, images
// with srcset, fonts, an icon), packaged by `crawler wacz`, opened in
// ReplayWeb.page (npm replaywebpage's prebuilt ui.js and sw.js, served by
// Debian's nginx on 127.0.0.1) in Debian's Chromium driven by puppeteer-core
// (tests/replay/replay_check.cjs). For several pages: the title and text
// show, the stylesheets apply (down the @import chain), no image is broken,
// and the replay answers no archived request with a 404. And a continuous
// crawl's WACZ (304s written as revisit records, killed -9 and resumed):
// each capture replays at its own time, a 304 revisit as the capture it
// refers to. And a crawl with payloads stored once (dedup.payload): a
// page's requisites written as revisits of captures at other URLs; a second
// crawl whose pages are revisits of the first's (dedup.from), packaged
// with it.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "crawl_output.h"
#include "loopback.h"
#include "nginx.h"
#include "run_command.h"
#include "testsite_crawl.h"
#include "testsite_process.h"

namespace crawler::archive {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using testing::CommandResult;
using testing::RunCommand;
using testing::TempDir;
using testing::TestSite;

// Where scripts/install-deps.sh puts ReplayWeb.page's two files.
constexpr const char* kReplayWebPage =
    "/usr/local/share/crawler-tests/replaywebpage-2.5.3";

// Debian's nginx serving `root` over plain HTTP (with Range requests, which
// ReplayWeb.page reads a WACZ with).
testing::NginxSite StaticSite(const std::string& root) {
  return {.root = root,
          .types = "text/html html; application/javascript js; application/zip wacz;"};
}

// The crawl `out` packaged into www/crawl.wacz under `dir`, beside
// ReplayWeb.page's files, served by nginx.
class Viewer {
 public:
  // `with`: earlier crawls packaged with it (crawler wacz --with).
  Viewer(const std::string& dir, const std::string& out,
         const std::vector<std::string>& with = {})
      : www_(dir + "/www") {
    REQUIRE(fs::exists(std::string(kReplayWebPage) + "/sw.js"));  // install-deps.sh
    fs::create_directories(www_ + "/replay");
    std::string also;
    for (const std::string& w : with) also += " --with " + w;
    CommandResult pack = RunCommand(std::string(CRAWLER_BINARY) + " wacz " + out +
                                    " -o " + www_ + "/crawl.wacz" + also);
    INFO(pack.output);
    REQUIRE(pack.exit_code == 0);
    packed_ = pack.output;
    fs::copy_file(std::string(kReplayWebPage) + "/ui.js", www_ + "/ui.js");
    fs::copy_file(std::string(kReplayWebPage) + "/sw.js", www_ + "/replay/sw.js");
    fs::copy_file(std::string(CRAWLER_SOURCE_DIR) + "/tests/replay/index.html",
                  www_ + "/index.html");
    server_ =
        std::make_unique<testing::Nginx>(dir, testing::FreePort(), StaticSite(www_));
  }
  const std::string& packed() const { return packed_; }

  // What a reader sees of each of `pages` ("URL" or "TS@URL": replay_check.cjs),
  // in their order.
  std::vector<json::object> Seen(const std::vector<std::string>& pages) const {
    std::string args;
    for (const std::string& p : pages) args += " " + p;
    CommandResult seen =
        RunCommand("NODE_PATH=$(npm root -g) node " + std::string(CRAWLER_SOURCE_DIR) +
                   "/tests/replay/replay_check.cjs " + server_->Origin() + args);
    INFO(seen.output);
    REQUIRE(seen.exit_code == 0);
    std::vector<json::object> out;
    std::istringstream lines(seen.output);
    for (std::string line; std::getline(lines, line);)
      if (!line.empty() && line[0] == '{') out.push_back(json::parse(line).as_object());
    REQUIRE(out.size() == pages.size());
    return out;
  }

 private:
  std::string www_, packed_;
  std::unique_ptr<testing::Nginx> server_;
};

std::string Str(const json::object& o, const char* key) {
  return std::string(o.at(key).as_string());
}

// site.css applied, and base.css, which it @imports (h1's image-set); no
// image broken.
void CheckStyledPage(const json::object& o) {
  CHECK_THAT(Str(o, "body_background"), Catch::Contains("bg.png"));
  CHECK_THAT(Str(o, "h1_background"), Catch::Contains("h1.png"));
  const json::array& images = o.at("images").as_array();
  CHECK_FALSE(images.empty());
  for (const json::value& img : images) CHECK(img.at("ok").as_bool());
}

// The testsite whose seeds are in DIR/seeds.txt crawled into `out` with
// configs/archive.toml, no politeness delay, and `extra` settings.
void CrawlForReplay(const std::string& dir, const std::string& out,
                    const std::string& extra = "") {
  CommandResult r = engine::testsite_crawl::Crawl(
      dir + "/seeds.txt", out,
      std::string("--config ") + CRAWLER_SOURCE_DIR +
          "/configs/archive.toml --set frontier.min_delay_s=0 " + extra);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
}

TEST_CASE(
    "Replay: a crawl's WACZ opened in ReplayWeb.page in headless Chromium shows each "
    "page with its stylesheets applied, no image broken, no archived request a 404",
    "[engine][replay]") {
  std::string dir = TempDir("replay");
  TestSite site("--pages 60 --hosts 1 --slow-ms 10 --assets", dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  const std::string out = dir + "/out";
  CrawlForReplay(dir, out);
  site.Stop();
  Viewer viewer(dir, out);

  const std::string origin = site.Origin(0);
  const std::vector<std::string> pages = {origin + "/", origin + "/p/1.html",
                                          origin + "/p/7.html"};
  const std::vector<json::object> seen = viewer.Seen(pages);
  for (size_t k = 0; k < pages.size(); ++k) {
    const json::object& o = seen[k];
    INFO(json::serialize(o));
    const size_t i = k == 0 ? 0 : std::stoul(pages[k].substr(pages[k].rfind('/') + 1));
    CHECK(Str(o, "url") == pages[k]);
    CHECK(Str(o, "title") == "host 0 page " + std::to_string(i));
    CHECK(Str(o, "h1") == "Page " + std::to_string(i));
    CheckStyledPage(o);
    CHECK(o.at("missing").as_array().empty());
  }
  fs::remove_all(dir);
}

// One capture of a URL as the WARC holds it: a response (its status, the
// testsite's ETag: the page's version) or a revisit (its profile).
struct Capture {
  std::string ts;  // 14 digits
  std::string type, status, etag, profile;
};

// "2026-12-02T17:49:37Z" -> "20261202174937"
std::string Ts(const std::string& warc_date) {
  std::string ts;
  for (char c : warc_date.substr(0, 19))
    if (c >= '0' && c <= '9') ts += c;
  return ts;
}

// Now, as a capture's timestamp (UTC, 14 digits).
std::string NowTs() {
  const std::time_t t =
      std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  ::gmtime_r(&t, &utc);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y%m%d%H%M%S", &utc);
  return buf;
}

std::string Unquoted(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), '"'), s.end());
  return s;
}

TEST_CASE(
    "Replay: a continuous crawl's WACZ, killed -9 and resumed, replays every capture: a "
    "page at a 304 revisit shows the capture it refers to with its stylesheets, a "
    "changed page each version at its own time",
    "[engine][replay][recrawl]") {
  std::string dir = TempDir("replay-recrawl");
  // HTML pages change every 6 s on average, each at its own rate (0.75 .. 48 s);
  // the stylesheets, images and icon never do (304s from the first revisit).
  TestSite site("--pages 20 --hosts 1 --slow-ms 10 --assets --change-mean-s 6",
                dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  const std::string out = dir + "/out", crawler = CRAWLER_BINARY;
  const std::string recrawl =
      " --set recrawl.enabled=true --set recrawl.interval_s=1 "
      "--set recrawl.min_interval_s=0.5 --set recrawl.max_interval_s=3 "
      "--set checkpoint.interval_s=1";
  pid_t pid =
      testing::Spawn(crawler + " crawl --seeds " + dir + "/seeds.txt --out " + out +
                         " --config " + CRAWLER_SOURCE_DIR +
                         "/configs/archive.toml --set frontier.min_delay_s=0" + recrawl,
                     dir + "/crawl.out");
  testing::Reaper reap_pid(pid);
  // Killed once a checkpoint holds revisits of every kind.
  auto revisits = [&] {
    CommandResult st = RunCommand(crawler + " stats " + out + " --json");
    if (st.exit_code != 0) return false;
    boost::system::error_code ec;
    json::value v = json::parse(st.output, ec);
    if (ec || !v.is_object() || !v.as_object().contains("crawl")) return false;
    const json::object& c = v.at("crawl").as_object();
    auto count = [&](const char* key) -> uint64_t {
      const json::value* n = c.if_contains(key);
      return n != nullptr && n->is_number() ? n->to_number<uint64_t>() : 0;
    };
    return count("revisits_not_modified") >= 120 && count("revisits_changed") >= 10;
  };
  REQUIRE(testing::WaitFor(revisits, 120));
  ::kill(pid, SIGKILL);
  REQUIRE(testing::WaitExitFor(pid, 10) == -1);
  // The killed run's captures are before this second, the resumed run's
  // after it: the resume starts once the clock has passed it.
  const std::string killed_ts = NowTs();
  REQUIRE(testing::WaitFor([&] { return NowTs() > killed_ts; }, 5));
  CommandResult resumed =
      RunCommand(crawler + " crawl --resume " + out + " --set crawl.max_duration_s=6");
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  site.Stop();

  // Each page's captures, by time (a second that holds two is left out: a
  // timestamp would not name one).
  std::map<std::string, std::vector<Capture>> captures;
  for (const testing::WarcRecord& w : testing::WarcRecords(out)) {
    if (w.type != "response" && w.type != "revisit") continue;
    if (w.uri.find("/p/") == std::string::npos) continue;
    captures[w.uri].push_back(
        Capture{Ts(w.date), w.type, w.status, Unquoted(w.etag), w.profile});
  }
  // Picked: a 304 revisit of the killed run, one of the resumed run whose
  // capture was before the kill, and a page's last two versions.
  std::vector<std::string> pages;
  std::vector<std::string> expected;  // the version each should show
  std::string before_kill, across, changed;
  for (auto& [url, list] : captures) {
    std::map<std::string, int> per_second;
    for (const Capture& c : list) ++per_second[c.ts];
    const Capture* last_full = nullptr;
    for (const Capture& c : list) {
      const bool unique = per_second[c.ts] == 1;
      if (c.type == "response" && c.status == "200") {
        if (unique && last_full != nullptr && per_second[last_full->ts] == 1 &&
            last_full->etag != c.etag && changed.empty()) {
          changed = url;
          pages.push_back(last_full->ts + "@" + url);
          expected.push_back(last_full->etag);
          pages.push_back(c.ts + "@" + url);
          expected.push_back(c.etag);
        }
        last_full = &c;
        continue;
      }
      if (c.type != "revisit" ||
          c.profile.find("server-not-modified") == std::string::npos || !unique ||
          last_full == nullptr)
        continue;
      const bool after = c.ts > killed_ts && last_full->ts < killed_ts;
      std::string& slot = after ? across : before_kill;
      if (!slot.empty() || (!after && c.ts >= killed_ts)) continue;
      slot = url;
      pages.push_back(c.ts + "@" + url);
      expected.push_back(last_full->etag);
    }
  }
  INFO("304 before the kill: " << before_kill << ", across it: " << across
                               << ", changed: " << changed);
  REQUIRE_FALSE(before_kill.empty());
  REQUIRE_FALSE(across.empty());
  REQUIRE_FALSE(changed.empty());

  Viewer viewer(dir, out);
  // Every 304 revisit of the crawl was given its capture's status.
  CHECK_THAT(viewer.packed(), Catch::Contains("not-modified revisits indexed with their "
                                              "capture's status"));
  const std::vector<json::object> seen = viewer.Seen(pages);
  for (size_t k = 0; k < pages.size(); ++k) {
    const json::object& o = seen[k];
    INFO(pages[k] << ": " << json::serialize(o));
    const std::string url = pages[k].substr(pages[k].find('@') + 1);
    const std::string i =
        url.substr(url.rfind('/') + 1, url.rfind('.') - url.rfind('/') - 1);
    CHECK(Str(o, "title") == "host 0 page " + i);
    CHECK(Str(o, "h1") == "Page " + i);
    CHECK(Unquoted(Str(o, "version")) == expected[k]);
    // Every image shows, the SVG too: replayed from a 304 revisit, it has
    // its capture's Content-Type (a 304's head has none, and the replay
    // serves the revisit's head; crawler/warc.h, HeadForNotModified). An
    // image without one shows only if the browser sniffs it (PNG), never
    // an SVG.
    CheckStyledPage(o);
    CHECK(o.at("images").as_array().size() >= 2);
    // Nothing archived is missing (the page's icon has its type too, so
    // the browser asks for no /favicon.ico of its own).
    CHECK(o.at("missing").as_array().empty());
  }
  fs::remove_all(dir);
}

TEST_CASE(
    "Replay: a crawl with payloads stored once: a page whose stylesheet and images are "
    "revisits of captures at other URLs shows styled, no image broken, nothing missing",
    "[engine][replay][payload]") {
  std::string dir = TempDir("replay-payload");
  // Page i loads its requisites as ...?v=i: the same payloads under new URLs.
  TestSite site(
      "--pages 40 --hosts 2 --slow-ms 10 --assets --asset-bytes 2048 "
      "--asset-query",
      dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  const std::string out = dir + "/out";
  CrawlForReplay(dir, out);
  site.Stop();
  // Pages whose stylesheet and 1x image were both written as revisits of a
  // capture at another URL (dedup.payload is on in archive.toml).
  std::map<std::string, int> revisited;  // page URL -> its requisites revisited
  for (const testing::WarcRecord& w : testing::WarcRecords(out)) {
    const size_t v = w.uri.find("?v=");
    if (w.type != "revisit" || v == std::string::npos || w.refers_to_uri == w.uri ||
        (w.uri.find("/site.css") == std::string::npos &&
         w.uri.find("-2x") != std::string::npos) ||
        w.uri.find("favicon") != std::string::npos)
      continue;
    const std::string origin = w.uri.substr(0, w.uri.find("/static/"));
    const std::string i = w.uri.substr(v + 3);
    ++revisited[origin + (i == "0" ? "/" : "/p/" + i + ".html")];
  }
  std::vector<std::string> pages;
  for (const auto& [page, n] : revisited)
    if (n == 2 && pages.size() < 3) pages.push_back(page);
  INFO(revisited.size() << " pages with requisites revisited");
  REQUIRE(pages.size() == 3);

  Viewer viewer(dir, out);
  const std::vector<json::object> seen = viewer.Seen(pages);
  for (size_t k = 0; k < pages.size(); ++k) {
    const json::object& o = seen[k];
    INFO(pages[k] << ": " << json::serialize(o));
    CHECK(Str(o, "url") == pages[k]);
    CheckStyledPage(o);
    CHECK(o.at("missing").as_array().empty());
  }
  fs::remove_all(dir);
}

TEST_CASE(
    "Replay: a second crawl with dedup.from = the first, packaged with it (wacz --with): "
    "pages that are revisits of the first crawl's captures show, styled, nothing missing",
    "[engine][replay][payload]") {
  std::string dir = TempDir("replay-from");
  TestSite site("--pages 30 --hosts 1 --slow-ms 10 --assets --asset-bytes 2048",
                dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  const std::string first = dir + "/first", second = dir + "/second";
  CrawlForReplay(dir, first);
  // A second apart, so no capture of the second crawl has a first's timestamp.
  const std::string first_done = NowTs();
  REQUIRE(testing::WaitFor([&] { return NowTs() > first_done; }, 5));
  CrawlForReplay(dir, second, "--set 'dedup.from=[\"" + first + "\"]'");
  site.Stop();
  // The second crawl's pages, each a revisit of the first crawl's capture.
  std::vector<std::string> pages;
  for (const testing::WarcRecord& w : testing::WarcRecords(second)) {
    const std::string path = testing::Path(w.uri);
    if (w.type == "revisit" && w.refers_to.empty() && pages.size() < 3 &&
        (path == "/" || path.starts_with("/p/")))
      pages.push_back(Ts(w.date) + "@" + w.uri);
  }
  REQUIRE(pages.size() == 3);
  Viewer viewer(dir, second, {first});
  const std::vector<json::object> seen = viewer.Seen(pages);
  for (size_t k = 0; k < pages.size(); ++k) {
    const json::object& o = seen[k];
    INFO(pages[k] << ": " << json::serialize(o));
    CHECK_THAT(Str(o, "title"), Catch::StartsWith("host 0 page "));
    CHECK_THAT(Str(o, "h1"), Catch::StartsWith("Page "));
    CheckStyledPage(o);
    CHECK(o.at("missing").as_array().empty());
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace crawler::archive
