// browser/renderer.h: Debian's chromium, headless over the DevTools pipe,
// renders pages a real HTTP server on 127.0.0.1 serves: a page built by
// script (links only after a fetch() answers), lazy content that comes on
// scrolling, a page whose requests never end (ended at its cap), an address where
// nothing listens, and a browser killed -9 mid-crawl. Each Renderer's
// process group is gone after it.
#include <signal.h>
#include <strings.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../support/crawl_output.h"
#include "../support/http_test_server.h"
#include "../support/loopback.h"
#include "../support/run_command.h"
#include "browser/pool.h"
#include "browser/renderer.h"

namespace crawler::browser {
namespace {

using testing::HttpTestServer;

HttpTestServer::Response Answer(int status, const char* type, std::string body) {
  HttpTestServer::Response r;
  r.status = status;
  r.headers = {{"Content-Type", type}};
  r.body = std::move(body);
  return r;
}

HttpTestServer::Response Html(std::string body) {
  return Answer(200, "text/html", std::move(body));
}

HttpTestServer::Response Js(std::string body) {
  return Answer(200, "application/javascript", std::move(body));
}

// The pages: /app (an empty root and a script), /lazy (more on scrolling),
// /poll (a request every 100 ms, forever), /plain (a link in its HTML).
HttpTestServer::Response Site(const std::string& path) {
  if (path == "/app") {
    return Html(
        "<html><body><div id=root></div><noscript>enable JavaScript</noscript>"
        "<script src=/app.js></script></body></html>");
  }
  if (path == "/app.js") {
    return Js(
        "fetch('/api/items.json').then(r => r.json()).then(items => {"
        " for (const i of items) { const a = document.createElement('a');"
        " a.href = '/item/' + i; a.textContent = i;"
        " document.getElementById('root').appendChild(a); } });");
  }
  if (path == "/api/items.json") {
    HttpTestServer::Response r =
        Answer(200, "application/json", R"(["one","two","three"])");
    r.delay_ms = 200;  // the page is read after it answers, however late
    return r;
  }
  if (path == "/lazy") {
    return Html(
        "<html><body><div style='height:4000px'>tall</div><div id=end></div><script>"
        "let n = 0; window.addEventListener('scroll', () => {"
        " if (n < 2 && innerHeight + scrollY >= document.body.scrollHeight - 10) {"
        "  n++; const k = n; fetch('/more.json?' + k).then(r => r.text()).then(() => {"
        "   const a = document.createElement('a'); a.href = '/lazy/' + k;"
        "   a.style.display = 'block'; a.style.height = '2000px';"
        "   document.getElementById('end').appendChild(a); }); } });"
        "</script></body></html>");
  }
  if (path.rfind("/more.json", 0) == 0 || path.rfind("/poll?", 0) == 0) {
    return Answer(200, "application/json", "{}");
  }
  if (path == "/poll-page") {
    return Html(
        "<html><body><a href=/static>s</a><script>fetch('/hang');"
        "setInterval(() => fetch('/poll?' + Date.now()), 100);</script></body></html>");
  }
  if (path == "/hang") {  // answered when the server stops: always in flight
    HttpTestServer::Response r = Answer(200, "text/plain", "late");
    r.delay_ms = 600000;
    return r;
  }
  if (path == "/plain") return Html("<html><body><a href=/next>next</a></body></html>");
  return Answer(404, "text/plain", "not found");
}

std::unique_ptr<Renderer> StartRenderer(const std::string& name) {
  const std::string dir = testing::TempDir(name);
  LaunchOptions o;
  o.user_data_dir = dir + "/profile";
  o.log_path = dir + "/chromium.log";
  auto r = Renderer::Start(o);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  return std::move(r).value();
}

// url rendered: the result, or the test stops naming why not.
RenderResult Rendered(Renderer& renderer, const std::string& url,
                      const RenderOptions& o = {}) {
  auto r = renderer.Render(url, o);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  return std::move(r).value();
}

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

const RenderedRequest* Request(const RenderResult& r, const std::string& url) {
  for (const RenderedRequest& q : r.requests) {
    if (q.url == url) return &q;
  }
  return nullptr;
}

std::string HeaderOf(const Headers& headers, const std::string& name) {
  for (const auto& [n, v] : headers) {
    if (strcasecmp(n.c_str(), name.c_str()) == 0) return v;
  }
  return "";
}

// Whether no process of Chromium's group is left (it led its own group).
bool GroupGone(pid_t group) { return ::kill(-group, 0) != 0 && errno == ESRCH; }

TEST_CASE("Browser: a page built by script is read after its fetch() answers",
          "[browser]") {
  std::atomic<int> documents{0};  // requests for /app
  HttpTestServer server([&](const std::string& path) {
    if (path == "/app") ++documents;
    return Site(path);
  });
  pid_t group = 0;
  {
    auto renderer = StartRenderer("browser-app");
    group = renderer->pid();
    const RenderResult r = Rendered(*renderer, server.Url("/app"));
    CHECK(r.idle);
    CHECK(r.url == server.Url("/app"));
    for (const char* item : {"one", "two", "three"}) {
      CHECK(Has(r.links, server.Url(std::string("/item/") + item)));
    }
    CHECK(r.html.find("/item/two") != std::string::npos);
    // Every request, with its answer and who asked.
    const RenderedRequest* doc = Request(r, server.Url("/app"));
    const RenderedRequest* script = Request(r, server.Url("/app.js"));
    const RenderedRequest* api = Request(r, server.Url("/api/items.json"));
    REQUIRE(doc != nullptr);
    REQUIRE(script != nullptr);
    REQUIRE(api != nullptr);
    CHECK(doc->type == "Document");
    CHECK(doc->status == 200);
    CHECK(script->type == "Script");
    CHECK(script->initiator == server.Url("/app"));
    CHECK(api->type == "Fetch");
    CHECK(api->status == 200);
    CHECK(api->initiator == server.Url("/app.js"));
    // Every response as the browser received it: headers and body.
    CHECK(script->captured);
    CHECK(script->body == Site("/app.js").body);
    CHECK(HeaderOf(script->response_headers, "Content-Type") == "application/javascript");
    CHECK(HeaderOf(script->request_headers, "User-Agent").find("Chrome") !=
          std::string::npos);
    CHECK(api->body == R"(["one","two","three"])");
    CHECK_FALSE(doc->from_crawl);
    // The page's own document given from the crawl's fetch: the server is
    // not asked for it again; the rest of the page is as before.
    REQUIRE(documents == 1);
    RenderOptions given;
    given.document = Document{200, {{"Content-Type", "text/html"}}, Site("/app").body};
    const RenderResult again = Rendered(*renderer, server.Url("/app"), given);
    const RenderedRequest* doc2 = Request(again, server.Url("/app"));
    REQUIRE(doc2 != nullptr);
    CHECK(doc2->from_crawl);
    CHECK(doc2->status == 200);
    CHECK(Has(again.links, server.Url("/item/three")));
    CHECK(documents == 1);
    CHECK(Request(again, server.Url("/api/items.json")) != nullptr);
    // The same renderer, the next page in a tab of its own.
    const RenderResult plain = Rendered(*renderer, server.Url("/plain"));
    CHECK(plain.links == std::vector<std::string>{server.Url("/next")});
    CHECK(Request(plain, server.Url("/app.js")) == nullptr);
  }
  CHECK(testing::WaitFor([&] { return GroupGone(group); }, 30));
}

TEST_CASE("Browser: links that come on scrolling are read after the scrolls",
          "[browser]") {
  HttpTestServer server(Site);
  auto renderer = StartRenderer("browser-lazy");
  // The page asks for more in its scroll event, a frame after the scroll: a
  // wide idle window, so a loaded machine's late frame is still waited for.
  RenderOptions o;
  o.idle_ms = 1500;
  o.page_timeout_s = 120;
  const RenderResult r = Rendered(*renderer, server.Url("/lazy"), o);
  CHECK(Has(r.links, server.Url("/lazy/1")));
  CHECK(Has(r.links, server.Url("/lazy/2")));
  CHECK(r.scrolls >= 2);
  CHECK(Request(r, server.Url("/more.json?2")) != nullptr);
  // No scroll: the lazy links are not there (what the behaviors add).
  RenderOptions still = o;
  still.scroll_steps = 0;
  const RenderResult s = Rendered(*renderer, server.Url("/lazy"), still);
  CHECK(s.scrolls == 0);
  CHECK_FALSE(Has(s.links, server.Url("/lazy/1")));
}

TEST_CASE("Browser: a page that is never idle ends at its cap, read as it stands",
          "[browser]") {
  HttpTestServer server(Site);
  auto renderer = StartRenderer("browser-poll");
  RenderOptions o;
  o.page_timeout_s = 5;
  const RenderResult r = Rendered(*renderer, server.Url("/poll-page"), o);
  CHECK_FALSE(r.idle);
  CHECK(r.links == std::vector<std::string>{server.Url("/static")});
  const RenderedRequest* hang = Request(r, server.Url("/hang"));
  REQUIRE(hang != nullptr);
  CHECK(hang->status == 0);  // still waiting when the page was read
  CHECK_FALSE(hang->failed);
}

TEST_CASE("Browser: an address where nothing listens, a browser killed: errors",
          "[browser]") {
  HttpTestServer server(Site);
  const testing::RefusedPort refused;
  const std::string dead = "http://127.0.0.1:" + std::to_string(refused.port()) + "/";
  auto renderer = StartRenderer("browser-dead");
  auto r = renderer->Render(dead, RenderOptions{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("ERR_CONNECTION_REFUSED") != std::string::npos);
  CHECK(renderer->alive());  // a page's failure is not the browser's
  const pid_t group = renderer->pid();
  ::kill(-group, SIGKILL);
  auto after = renderer->Render(server.Url("/plain"), RenderOptions{});
  REQUIRE_FALSE(after.ok());
  CHECK_FALSE(renderer->alive());
  renderer.reset();
  CHECK(testing::WaitFor([&] { return GroupGone(group); }, 30));
}

// A page whose document is answered only once the test says so (or the
// server stops): a page in a browser's tab at a moment the test picks.
struct GatedSite {
  std::atomic<bool> open{false};
  std::atomic<int> asked{0};
  HttpTestServer::Response operator()(const std::string& path) {
    if (path == "/gate") {
      ++asked;
      testing::WaitFor([&] { return open.load(); }, 120);
      return Html("<html><body><a href=/after-gate>g</a></body></html>");
    }
    if (path == "/spin")
      return Html("<html><body><script>for (;;) {}</script></body></html>");
    if (path.rfind("/page/", 0) == 0) {
      return Html("<html><body><a href=/next/" + path.substr(6) + ">n</a></body></html>");
    }
    return Site(path);
  }
};

PoolOptions PoolIn(const std::string& name, int processes, int restart_pages) {
  const std::string dir = testing::TempDir(name);
  PoolOptions o;
  o.launch.user_data_dir = dir + "/profiles";
  o.launch.log_path = dir + "/chromium.log";
  o.processes = processes;
  o.restart_pages = restart_pages;
  return o;
}

// What the jobs' done callbacks saw, by URL.
struct Answers {
  Mutex mu;
  std::map<std::string, std::pair<Outcome, Result<RenderResult>>> by_url GUARDED_BY(mu);
  RenderJob Job(const std::string& url, RenderOptions o = {}) {
    return {url, std::move(o), [this, url](Result<RenderResult> r, Outcome outcome) {
              MutexLock lock(mu);
              by_url.emplace(url, std::make_pair(outcome, std::move(r)));
            }};
  }
  size_t size() {
    MutexLock lock(mu);
    return by_url.size();
  }
  Outcome outcome(const std::string& url) {
    MutexLock lock(mu);
    return by_url.at(url).first;
  }
  Result<RenderResult> result(const std::string& url) {
    MutexLock lock(mu);
    return by_url.at(url).second;
  }
};

TEST_CASE("Browser pool: pages over two browsers, each restarted every two pages",
          "[browser][pool]") {
  GatedSite site;
  HttpTestServer server(std::ref(site));
  Answers answers;
  std::vector<pid_t> seen;
  {
    Pool pool(PoolIn("browser-pool", 2, 2));
    CHECK(pool.pids() == std::vector<pid_t>{});  // nothing started before a page
    for (int i = 0; i < 6; ++i) {
      pool.Submit(answers.Job(server.Url("/page/" + std::to_string(i))));
    }
    REQUIRE(testing::WaitFor([&] { return answers.size() == 6; }, 300));
    for (int i = 0; i < 6; ++i) {
      const std::string url = server.Url("/page/" + std::to_string(i));
      REQUIRE(answers.outcome(url) == Outcome::kRendered);
      CHECK(answers.result(url)->links ==
            std::vector<std::string>{server.Url("/next/" + std::to_string(i))});
    }
    const Pool::Figures f = pool.figures();
    CHECK(f.rendered == 6);
    CHECK(f.started >= 3);  // six pages, two a browser
    CHECK(f.deaths == 0);
    seen = pool.pids();
  }
  for (pid_t pid : seen) {
    if (pid > 0) CHECK(testing::WaitFor([&] { return GroupGone(pid); }, 30));
  }
}

TEST_CASE("Browser pool: a browser killed -9 with a page in its tab loses no page",
          "[browser][pool]") {
  GatedSite site;
  HttpTestServer server(std::ref(site));
  Answers answers;
  Pool pool(PoolIn("browser-pool-kill", 1, 100));
  pool.Submit(answers.Job(server.Url("/gate")));
  REQUIRE(testing::WaitFor([&] { return site.asked.load() == 1; }, 120));
  const pid_t first = pool.pids().at(0);
  REQUIRE(first > 0);
  ::kill(-first, SIGKILL);
  // The page is rendered again in a fresh browser, which is let in.
  REQUIRE(testing::WaitFor([&] { return site.asked.load() == 2; }, 120));
  site.open = true;
  REQUIRE(testing::WaitFor([&] { return answers.size() == 1; }, 120));
  REQUIRE(answers.outcome(server.Url("/gate")) == Outcome::kRendered);
  CHECK(answers.result(server.Url("/gate"))->links ==
        std::vector<std::string>{server.Url("/after-gate")});
  const Pool::Figures f = pool.figures();
  CHECK(f.deaths == 1);
  CHECK(f.retried == 1);
  CHECK(f.started == 2);
  CHECK(pool.pids().at(0) != first);
}

TEST_CASE("Browser pool: a page that hangs is tried once more, then given up",
          "[browser][pool]") {
  GatedSite site;
  HttpTestServer server(std::ref(site));
  Answers answers;
  Pool pool(PoolIn("browser-pool-spin", 1, 100));
  RenderOptions o;
  o.page_timeout_s = 2;
  pool.Submit(answers.Job(server.Url("/spin"), o));
  REQUIRE(testing::WaitFor([&] { return answers.size() == 1; }, 300));
  CHECK(answers.outcome(server.Url("/spin")) == Outcome::kGivenUp);
  const Result<RenderResult> r = answers.result(server.Url("/spin"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Status::Code::kOutOfRange);
  CHECK(pool.figures().retried == 1);
  CHECK(pool.figures().given_up == 1);
}

TEST_CASE("Browser pool: a stop answers the pages not begun, none dropped",
          "[browser][pool]") {
  GatedSite site;
  HttpTestServer server(std::ref(site));
  Answers answers;
  Pool pool(PoolIn("browser-pool-stop", 1, 100));
  pool.Submit(answers.Job(server.Url("/gate")));
  pool.Submit(answers.Job(server.Url("/page/1")));
  pool.Submit(answers.Job(server.Url("/page/2")));
  REQUIRE(testing::WaitFor([&] { return site.asked.load() == 1; }, 120));
  std::thread stopper([&] { pool.Stop(); });
  REQUIRE(testing::WaitFor([&] { return answers.size() == 2; }, 120));
  site.open = true;  // the page in the tab finishes; then the pool stops
  stopper.join();
  REQUIRE(answers.size() == 3);
  CHECK(answers.outcome(server.Url("/gate")) == Outcome::kRendered);
  CHECK(answers.outcome(server.Url("/page/1")) == Outcome::kStopped);
  CHECK(answers.outcome(server.Url("/page/2")) == Outcome::kStopped);
  pool.Submit(answers.Job(server.Url("/page/3")));  // after the stop: answered at once
  CHECK(answers.outcome(server.Url("/page/3")) == Outcome::kStopped);
}

TEST_CASE("Browser pool: destroyed mid-page, it kills its browsers and answers the page",
          "[browser][pool]") {
  GatedSite site;
  HttpTestServer server(std::ref(site));
  Answers answers;
  pid_t group = 0;
  {
    Pool pool(PoolIn("browser-pool-kill-stop", 1, 100));
    pool.Submit(answers.Job(server.Url("/gate")));
    REQUIRE(testing::WaitFor([&] { return site.asked.load() == 1; }, 120));
    group = pool.pids().at(0);
  }  // not waiting for the page: the gate is never opened
  REQUIRE(answers.size() == 1);
  CHECK(answers.outcome(server.Url("/gate")) == Outcome::kStopped);
  CHECK(testing::WaitFor([&] { return GroupGone(group); }, 30));
  site.open = true;  // the server's handler thread ends
}

}  // namespace
}  // namespace crawler::browser
