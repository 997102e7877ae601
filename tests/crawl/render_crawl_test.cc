// [browser] render = "always": the real `crawler` binary, Debian's chromium
// and a real HTTP server on 127.0.0.1. A page whose links a script makes
// after a fetch() has them followed; the page's own document is asked of the
// server once (the browser is given the crawl's fetch); every response the
// browser received is archived, each URL once in the whole crawl.
#include <algorithm>
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>

#include "crawl_output.h"
#include "http_test_server.h"
#include "run_command.h"
#include "testsite_process.h"

namespace crawler::crawl {
namespace {

using testing::HttpTestServer;

HttpTestServer::Response Answer(const char* type, std::string body) {
  HttpTestServer::Response r;
  r.headers = {{"Content-Type", type}};
  r.body = std::move(body);
  return r;
}

// Occurrences of `needle` in `text`.
size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size()))
    ++n;
  return n;
}

TEST_CASE(
    "Rendered crawl: links a script makes are followed, each response archived once",
    "[engine][crawl][browser]") {
  std::mutex mu;
  std::map<std::string, int> asked;
  HttpTestServer site([&](const std::string& path) {
    {
      std::lock_guard<std::mutex> lock(mu);
      ++asked[path];
    }
    if (path == "/") {
      return Answer("text/html",
                    "<html><body><div id=root></div><script src=/app.js></script>"
                    "</body></html>");
    }
    if (path == "/app.js") {
      return Answer("application/javascript",
                    "fetch('/api/items.json').then(r => r.json()).then(items => {"
                    " for (const i of items) { const a = document.createElement('a');"
                    " a.href = '/item/' + i; a.textContent = i;"
                    " document.getElementById('root').appendChild(a); } });");
    }
    if (path == "/api/items.json") return Answer("application/json", R"(["1","2","3"])");
    if (path.rfind("/item/", 0) == 0) {
      return Answer("text/html",
                    "<html><body><p>item " + path.substr(6) +
                        "</p><script src=/common.js></script></body></html>");
    }
    if (path == "/common.js") return Answer("application/javascript", "var common = 1;");
    HttpTestServer::Response missing;
    missing.status = 404;
    return missing;
  });
  const std::string dir = testing::TempDir("render-crawl");
  const std::string out = dir + "/out";
  std::ofstream(dir + "/seeds.txt") << site.Url("/") << "\n";
  testing::CommandResult run = testing::RunCommand(
      std::string(CRAWLER_BINARY) + " crawl --seeds " + dir + "/seeds.txt --out " + out +
      " --config " CRAWLER_SOURCE_DIR
      "/configs/default.toml --set frontier.min_delay_s=0 --set browser.render=always "
      "--set browser.idle_ms=300");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);

  std::string log;
  {
    std::ifstream in(out + "/fetch-log.jsonl");
    log.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  INFO(log);
  // The items only a script links to are fetched, each once.
  for (const char* item : {"/item/1", "/item/2", "/item/3"}) {
    CHECK(Count(log, "\"url\":\"" + site.Url(item) + "\"") == 1);
  }
  // Four pages rendered: the application and its three items.
  CHECK(Count(log, "\"render\":\"rendered\"") == 4);
  {
    std::lock_guard<std::mutex> lock(mu);
    CHECK(asked["/"] == 1);  // the browser was given the crawl's fetch
    CHECK(asked["/item/1"] == 1);
    CHECK(asked["/api/items.json"] == 1);
  }
  // The browser's responses in the WARC, read by an independent reader:
  // the script, the API's JSON, and the script every item page loads, once.
  std::string warcs;
  for (const auto& e : std::filesystem::directory_iterator(out + "/warc"))
    if (e.path().extension() == ".gz") warcs += " " + e.path().string();
  testing::CommandResult index = testing::RunCommand("warcio index" + warcs);
  REQUIRE(index.exit_code == 0);
  auto responses = [&](const std::string& path) {
    return Count(index.output, "\"warc-type\":\"response\",\"warc-target-uri\":\"" +
                                   site.Url(path) + "\"");
  };
  CHECK(responses("/") == 1);
  CHECK(responses("/app.js") == 1);
  CHECK(responses("/api/items.json") == 1);
  CHECK(responses("/common.js") == 1);
  CHECK(responses("/item/2") == 1);
  CHECK(Count(index.output, "\"warc-type\":\"request\",\"warc-target-uri\":\"" +
                                site.Url("/api/items.json") + "\"") == 1);
  // Each browser record names its page (the UUID of the page's response
  // record), its type and its initiator, as Browsertrix Crawler does.
  testing::CommandResult fields = testing::RunCommand(
      "warcio index" + warcs +
      " -f warc-type warc-target-uri warc-record-id warc-page-id warc-resource-type "
      "warc-json-metadata");
  REQUIRE(fields.exit_code == 0);
  std::map<std::string, boost::json::object> response;  // by URL
  std::istringstream lines(fields.output);
  for (std::string line; std::getline(lines, line);) {
    boost::json::object o = boost::json::parse(line).as_object();
    if (o["warc-type"] == "response")
      response[std::string(o["warc-target-uri"].as_string())] = o;
  }
  INFO(fields.output);
  REQUIRE(response.count(site.Url("/")) == 1);
  REQUIRE(response.count(site.Url("/api/items.json")) == 1);
  const std::string page_id(response[site.Url("/")]["warc-record-id"].as_string());
  boost::json::object& items = response[site.Url("/api/items.json")];
  CHECK("<urn:uuid:" + std::string(items["warc-page-id"].as_string()) + ">" == page_id);
  CHECK(items["warc-resource-type"] == "fetch");
  CHECK(boost::json::parse(items["warc-json-metadata"].as_string()).at("initiator") ==
        boost::json::value(site.Url("/app.js")));
  CHECK(response[site.Url("/app.js")]["warc-resource-type"] == "script");
  // The page's own record is the crawl's, named by none of this.
  CHECK_FALSE(response[site.Url("/")].contains("warc-page-id"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("Rendered crawl: no browser to start, every page recorded as fetched, said",
          "[engine][crawl][browser]") {
  HttpTestServer site([](const std::string& path) {
    if (path == "/")
      return Answer("text/html", "<html><body><a href=/next>n</a></body></html>");
    if (path == "/next") return Answer("text/html", "<html><body>end</body></html>");
    HttpTestServer::Response missing;
    missing.status = 404;
    return missing;
  });
  const std::string dir = testing::TempDir("render-crawl-none");
  std::ofstream(dir + "/seeds.txt") << site.Url("/") << "\n";
  const std::string base = std::string(CRAWLER_BINARY) + " crawl --seeds " + dir +
                           "/seeds.txt --set frontier.min_delay_s=0 ";
  // A value the key does not take is named, and nothing runs.
  testing::CommandResult bad =
      testing::RunCommand(base + "--out " + dir + "/bad --set browser.render=sometimes");
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.output, Catch::Contains("browser.render"));
  testing::CommandResult run = testing::RunCommand(
      base + "--out " + dir +
      "/out --set browser.render=always --set browser.chromium=/nonexistent/chromium");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  std::string log;
  {
    std::ifstream in(dir + "/out/fetch-log.jsonl");
    log.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  INFO(log);
  CHECK(Count(log, "\"url\":\"" + site.Url("/next") + "\"") ==
        1);  // static links followed
  CHECK(Count(log, "\"render\":\"render-failed: ") == 2);
  CHECK(Count(log, "/nonexistent/chromium: not found") == 2);
  std::filesystem::remove_all(dir);
}

// The URLs of the WARC files' response records under `out`, as warcio (an
// independent reader) indexes them, each as often as it is there.
std::multiset<std::string> ArchivedResponses(const std::string& out) {
  std::string warcs;
  for (const auto& e : std::filesystem::directory_iterator(out + "/warc"))
    if (e.path().extension() == ".gz") warcs += " " + e.path().string();
  testing::CommandResult index = testing::RunCommand("warcio index" + warcs);
  REQUIRE(index.exit_code == 0);
  std::multiset<std::string> urls;
  const std::string key = "\"warc-type\":\"response\",\"warc-target-uri\":\"";
  for (size_t at = index.output.find(key); at != std::string::npos;
       at = index.output.find(key, at + 1)) {
    const size_t from = at + key.size();
    urls.insert(index.output.substr(from, index.output.find('"', from) - from));
  }
  return urls;
}

TEST_CASE(
    "Rendered crawl, render = auto, of crawler-testsite --js: its truth archived, each "
    "URL once; render = off: its static part only",
    "[engine][crawl][browser]") {
  const std::string dir = testing::TempDir("render-auto");
  testing::TestSite site("--js", dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  const std::set<std::string> truth = site.Truth();
  const std::set<std::string> static_truth = site.Truth("--static");
  const std::string base = std::string(CRAWLER_BINARY) + " crawl --seeds " + dir +
                           "/seeds.txt --set frontier.min_delay_s=0 "
                           "--set browser.page_timeout_s=10 --set browser.processes=2 "
                           "--set browser.idle_ms=300 ";
  SECTION("auto") {
    testing::CommandResult run =
        testing::RunCommand(base + "--out " + dir + "/auto --set browser.render=auto");
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    const std::multiset<std::string> archived = ArchivedResponses(dir + "/auto");
    for (const std::string& url : truth) {
      INFO(url);
      CHECK(archived.count(url) == 1);
    }
    // Nothing twice (favicon.ico and robots.txt, beside the truth, included).
    for (const std::string& url :
         std::set<std::string>(archived.begin(), archived.end())) {
      INFO(url);
      CHECK(archived.count(url) == 1);
    }
    const std::string log = testing::ReadText(dir + "/auto/fetch-log.jsonl");
    // The page that polls forever ends at its cap and says so.
    CHECK(Count(log, "\"render\":\"rendered-cap\"") >= 1);
    // The browser's figures: that page's 10 s cap is the slowest render, the
    // browsers' CPU is counted (their helpers' too), and `crawler stats`
    // shows them.
    const boost::json::object browser =
        boost::json::parse(testing::ReadText(dir + "/auto/stats.json"))
            .at("browser")
            .as_object();
    INFO(boost::json::serialize(browser));
    CHECK(browser.at("enabled").as_bool());
    CHECK(browser.at("started").to_number<uint64_t>() >= 1);
    CHECK(browser.at("render_p50_s").to_number<double>() > 0);
    CHECK(browser.at("render_p50_s").to_number<double>() < 8);
    CHECK(browser.at("render_p99_s").to_number<double>() >= 8);
    CHECK(browser.at("cpu_s").to_number<double>() > 0);
    const double share = browser.at("cpu_share").to_number<double>();
    CHECK((share > 0 && share < 1));
    testing::CommandResult stats =
        testing::RunCommand(std::string(CRAWLER_BINARY) + " stats " + dir + "/auto");
    CHECK_THAT(stats.output,
               Catch::Contains("render time") && Catch::Contains("the browsers took"));
  }
  SECTION("off") {
    testing::CommandResult run =
        testing::RunCommand(base + "--out " + dir + "/off --set browser.render=off");
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    std::multiset<std::string> archived = ArchivedResponses(dir + "/off");
    archived.erase(site.Origin(0) + "/robots.txt");
    CHECK(std::set<std::string>(archived.begin(), archived.end()) == static_truth);
    CHECK(archived.size() == static_truth.size());
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace crawler::crawl
