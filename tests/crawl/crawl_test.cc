// The real `crawler` binary against real HTTP servers on 127.0.0.1: the fetch
// log holds exactly the URLs a correct crawl must fetch, no URL is requested
// twice (counted from the servers' own request logs), robots.txt outcomes are
// obeyed (disallow, 404 = allow all, 500 = disallow all), redirects are hops
// of their own, and bad input gives exit code 2 with a message naming it.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "crawl_output.h"
#include "http_test_server.h"
#include "run_command.h"

namespace crawler::crawl {
namespace {

using testing::HttpTestServer;

testing::CommandResult Run(const std::string& args) {
  return testing::RunCommand(std::string(CRAWLER_BINARY) + " " + args);
}

// A request log shared by the servers' handler threads.
class RequestLog {
 public:
  void Add(int server, const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_[std::to_string(server) + path];
  }
  std::map<std::string, int> counts() {
    std::lock_guard<std::mutex> lock(mu_);
    return counts_;
  }

 private:
  std::mutex mu_;
  std::map<std::string, int> counts_;
};

using testing::TempDir;

std::multiset<std::string> FetchLogUrls(const std::string& path,
                                        std::string* all = nullptr) {
  std::ifstream in(path);
  std::multiset<std::string> urls;
  std::string line;
  while (std::getline(in, line)) {
    if (all != nullptr) *all += line + "\n";
    // An attempt fetched again (a transient failure) is not the URL's line.
    if (line.find("\"final\":false") != std::string::npos) continue;
    size_t at = line.find("\"url\":\"") + 7;
    urls.insert(line.substr(at, line.find('"', at) - at));
  }
  return urls;
}

TEST_CASE(
    "Crawl: the fetch log is exactly the reachable, allowed, in-scope URLs, each once",
    "[engine][crawl]") {
  RequestLog log;
  int b_port = 0, c_port = 0;
  auto page = [](const std::vector<std::string>& links) {
    HttpTestServer::Response r;
    r.headers = {{"Content-Type", "text/html"}};
    r.body = "<html><body>";
    for (const auto& l : links) r.body += "<a href=\"" + l + "\">x</a>\n";
    r.body += "</body></html>";
    return r;
  };
  // Host A: robots disallows /private/; a chain of 20 pages, a redirect, a
  // redirect loop, a 404, links to B and C, links that differ by fragment/case.
  HttpTestServer a([&](const std::string& path) {
    log.Add(0, path);
    std::string b = "http://127.0.0.1:" + std::to_string(b_port);
    std::string c = "http://127.0.0.1:" + std::to_string(c_port);
    if (path == "/robots.txt") {
      HttpTestServer::Response r;
      r.body = "User-agent: *\nDisallow: /private/\n";
      return r;
    }
    if (path == "/") {
      return page({"/p/1", "/p/1#frag",
                   "HTTP://127.0.0.1:" + std::to_string(0) + "/never", "/private/secret",
                   "/old", "/loop1", "/missing", b + "/", c + "/", "mailto:x@y"});
    }
    if (path.rfind("/p/", 0) == 0) {
      int i = std::stoi(path.substr(3));
      if (i < 20)
        return page({"/p/" + std::to_string(i + 1), "/", b + "/b/" + std::to_string(i)});
      return page({"/"});
    }
    HttpTestServer::Response r;
    if (path == "/old") {
      r.status = 301;
      r.headers = {{"Location", "/new"}};
    } else if (path == "/loop1" || path == "/loop2") {
      r.status = 302;
      r.headers = {{"Location", path == "/loop1" ? "/loop2" : "/loop1"}};
    } else if (path == "/new") {
      return page({"/p/1"});
    } else {
      r.status = 404;
    }
    return r;
  });
  HttpTestServer b([&](const std::string& path) {
    log.Add(1, path);
    HttpTestServer::Response r;
    if (path == "/robots.txt") {
      r.status = 404;  // allow all
      return r;
    }
    r.headers = {{"Content-Type", "text/plain"}};
    r.body = "plain " + path;
    return r;
  });
  HttpTestServer c([&](const std::string& path) {
    log.Add(2, path);
    HttpTestServer::Response r;
    r.status = path == "/robots.txt" ? 500 : 200;  // 500: disallow all
    return r;
  });
  b_port = b.port();
  c_port = c.port();

  const std::string dir = TempDir("crawl-test");
  const std::string out = dir + "/out";
  std::ofstream(dir + "/seeds.txt") << "# test\n" << a.Url("/") << "\nnot a url\n";
  const std::string scope =
      "crawl.scope_hosts=['http://127.0.0.1:" + std::to_string(a.port()) +
      "','http://127.0.0.1:" + std::to_string(b.port()) +
      "','http://127.0.0.1:" + std::to_string(c.port()) + "']";
  testing::CommandResult run = Run(
      "crawl --seeds " + dir + "/seeds.txt --out " + out + " --config " +
      CRAWLER_SOURCE_DIR
      "/configs/cuckoo.toml --set frontier.min_delay_s=0 --set fetch.retry_base_s=0.05 "
      "--set \"" +
      scope + "\"");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.output, Catch::Contains("skipped seed") && Catch::Contains(":3:"));

  std::set<std::string> expected = {
      a.Url("/robots.txt"), a.Url("/"),      a.Url("/private/secret"), a.Url("/old"),
      a.Url("/new"),        a.Url("/loop1"), a.Url("/loop2"),          a.Url("/missing"),
      b.Url("/robots.txt"), b.Url("/"),      c.Url("/robots.txt"),     c.Url("/")};
  for (int i = 1; i <= 20; ++i) expected.insert(a.Url("/p/" + std::to_string(i)));
  for (int i = 1; i < 20; ++i) expected.insert(b.Url("/b/" + std::to_string(i)));
  std::string lines;
  std::multiset<std::string> logged = FetchLogUrls(out + "/fetch-log.jsonl", &lines);
  INFO(lines);
  CHECK(std::set<std::string>(logged.begin(), logged.end()) == expected);
  CHECK(logged.size() == expected.size());  // each URL once

  // The servers saw every allowed URL exactly once, and nothing robots forbids;
  // C's robots.txt (500) was fetched again fetch.max_retries (3) times before
  // the host was disallowed, and logged once as final.
  for (const auto& [path, count] : log.counts()) {
    INFO(path);
    CHECK(count == (path == "2/robots.txt" ? 4 : 1));
  }
  std::map<std::string, int> counts = log.counts();
  CHECK(counts.count("0/private/secret") == 0);
  CHECK(counts.count("2/") == 0);  // C's robots.txt answered 500
  CHECK(counts.count("0/loop1") == 1);
  CHECK_THAT(lines, Catch::Contains("\"error\":\"robots\""));

  // The WARC holds every response, read back by an independent reader.
  std::string warcs;
  for (const auto& e : std::filesystem::directory_iterator(out + "/warc"))
    warcs += " " + e.path().string();
  testing::CommandResult index = testing::RunCommand("warcio index" + warcs);
  REQUIRE(index.exit_code == 0);
  for (const auto& [path, count] : counts) {
    int server = path[0] - '0';
    HttpTestServer& s = server == 0 ? a : server == 1 ? b : c;
    CHECK_THAT(index.output,
               Catch::Contains("\"warc-type\":\"response\",\"warc-target-uri\":\"" +
                               s.Url(path.substr(1)) + "\""));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("Crawl: bad input exits 2 with a message naming what was wrong",
          "[engine][crawl]") {
  const std::string dir = TempDir("crawl-bad");
  std::ofstream(dir + "/seeds.txt") << "http://127.0.0.1:1/\n";
  std::ofstream(dir + "/empty.txt") << "# nothing\n";
  std::ofstream(dir + "/bad.toml") << "[crawl]\nmax_dept = 3\n";
  struct Case {
    std::string args, words;
  };
  for (const Case& c :
       {Case{"crawl --seeds " + dir + "/none.txt", "none.txt"},
        Case{"crawl --seeds " + dir + "/empty.txt", "no seed URL"},
        Case{"crawl --seeds " + dir + "/seeds.txt --config " + dir + "/bad.toml",
             "bad.toml:2: crawl.max_dept: unknown key"},
        Case{"crawl --seeds " + dir + "/seeds.txt --set dedup.type=quotient",
             "dedup.type: must be bloom, cuckoo or counting"},
        Case{"crawl", "--seeds FILE or --resume DIR is required"},
        Case{"fly", "unknown command 'fly'"}}) {
    testing::CommandResult r = Run(c.args);
    INFO(c.args << "\n" << r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains(c.words));
  }
  testing::CommandResult ok =
      Run("normalize --base http://a/b/c HTTP://A:80/x ../y mailto:z");
  CHECK(ok.exit_code == 1);
  CHECK(ok.output ==
        "http://a/x\nhttp://a/y\nerror: scheme 'mailto' is not http or https\n");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace crawler::crawl
