// Archives that archivists' tools open: a crawl of the
// testsite's pages with their requisites (stylesheets that @import, images
// with srcset, fonts, an icon), packaged by `crawler wacz`, opened in
// ReplayWeb.page (npm replaywebpage's prebuilt ui.js and sw.js, served by
// Debian's nginx on 127.0.0.1) in Debian's Chromium driven by puppeteer-core
// (tests/replay/replay_check.cjs). For several pages: the title and text
// show, the stylesheets apply (down the @import chain), no image is broken,
// and the replay answers no archived request with a 404.
#include <signal.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "crawl_output.h"
#include "loopback.h"
#include "nginx.h"
#include "run_command.h"
#include "testsite_crawl.h"
#include "testsite_process.h"

namespace crawler::engine {
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

TEST_CASE(
    "Replay: a crawl's WACZ opened in ReplayWeb.page in headless Chromium shows each "
    "page with its stylesheets applied, no image broken, no archived request a 404",
    "[engine][replay]") {
  REQUIRE(fs::exists(std::string(kReplayWebPage) + "/sw.js"));  // scripts/install-deps.sh
  std::string dir = TempDir("replay");
  TestSite site("--pages 60 --hosts 1 --slow-ms 10 --assets", dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  const std::string out = dir + "/out", www = dir + "/www";
  CommandResult r =
      testsite_crawl::Crawl(dir + "/seeds.txt", out,
                            std::string("--config ") + CRAWLER_SOURCE_DIR +
                                "/configs/archive.toml --set frontier.min_delay_s=0");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  site.Stop();
  fs::create_directories(www + "/replay");
  CommandResult pack = RunCommand(std::string(CRAWLER_BINARY) + " wacz " + out + " -o " +
                                  www + "/crawl.wacz");
  INFO(pack.output);
  REQUIRE(pack.exit_code == 0);
  fs::copy_file(std::string(kReplayWebPage) + "/ui.js", www + "/ui.js");
  fs::copy_file(std::string(kReplayWebPage) + "/sw.js", www + "/replay/sw.js");
  fs::copy_file(std::string(CRAWLER_SOURCE_DIR) + "/tests/replay/index.html",
                www + "/index.html");
  testing::Nginx server(dir, testing::FreePort(), StaticSite(www));

  const std::string origin = site.Origin(0);
  const std::vector<std::string> pages = {origin + "/", origin + "/p/1.html",
                                          origin + "/p/7.html"};
  std::string urls;
  for (const std::string& p : pages) urls += " " + p;
  CommandResult seen =
      RunCommand("NODE_PATH=$(npm root -g) node " + std::string(CRAWLER_SOURCE_DIR) +
                 "/tests/replay/replay_check.cjs " + server.Origin() + urls);
  INFO(seen.output);
  REQUIRE(seen.exit_code == 0);
  std::istringstream lines(seen.output);
  size_t shown = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != '{') continue;
    json::object o = json::parse(line).as_object();
    const std::string url(o.at("url").as_string());
    INFO(line);
    const size_t i = url == origin + "/" ? 0 : std::stoul(url.substr(url.rfind('/') + 1));
    CHECK(o.at("title").as_string() == "host 0 page " + std::to_string(i));
    CHECK(o.at("h1").as_string() == "Page " + std::to_string(i));
    // site.css applied, and base.css, which it @imports (h1's image-set).
    CHECK_THAT(std::string(o.at("body_background").as_string()),
               Catch::Contains("bg.png"));
    CHECK_THAT(std::string(o.at("h1_background").as_string()), Catch::Contains("h1.png"));
    const json::array& images = o.at("images").as_array();
    CHECK_FALSE(images.empty());
    for (const json::value& img : images) CHECK(img.at("ok").as_bool());
    CHECK(o.at("missing").as_array().empty());
    ++shown;
  }
  CHECK(shown == pages.size());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace crawler::engine
