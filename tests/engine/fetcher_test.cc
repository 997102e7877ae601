// The libcurl fetcher (crawler/fetcher.h) against real HTTP servers on
// 127.0.0.1: success, status codes, redirects not followed, size cap,
// timeouts, refused connections, malformed and silent servers, gzip, and
// many concurrent transfers over kept-alive connections.
#include "crawler/fetcher.h"

#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "../testsite/gzip.h"
#include "crawl_output.h"
#include "engine/retry.h"
#include "http_test_server.h"
#include "loopback.h"

namespace crawler::engine {
namespace {

using testing::HttpTestServer;

std::unique_ptr<Fetcher> MakeFetcher(FetchOptions o = {}) {
  auto f = Fetcher::Create(o);
  REQUIRE(f.ok());
  return std::move(f).value();
}

// Fetches `urls` to completion; results keyed by URL.
std::map<std::string, FetchResult> FetchAll(Fetcher& f,
                                            const std::vector<std::string>& urls) {
  std::map<std::string, FetchResult> out;
  for (const auto& u : urls) {
    f.Add(u, [&out](FetchResult&& r) { out[r.url] = std::move(r); });
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (f.Run(std::chrono::milliseconds(100)) > 0) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
  }
  return out;
}

FetchResult FetchOne(Fetcher& f, const std::string& url) {
  return FetchAll(f, {url})[url];
}

using testing::Gzip;

HttpTestServer::Response Route(const std::string& path) {
  HttpTestServer::Response r;
  if (path == "/page.html") {
    r.headers = {{"Content-Type", "text/html; charset=ISO-8859-1"},
                 {"etag", "\"v2\""},  // any case
                 {"Last-Modified", "Fri, 27 Nov 2026 12:00:00 GMT"}};
    r.body = "<html><a href=x>x</a></html>";
  } else if (path == "/missing") {
    r.status = 404;
    r.body = "not here";
  } else if (path == "/moved") {
    r.status = 301;
    r.headers = {{"Location", "/page.html"}};
  } else if (path == "/big") {
    r.body = std::string(100'000, 'b');
  } else if (path == "/slow") {
    r.delay_ms = 5000;
    r.body = "late";
  } else if (path == "/garbage") {
    r.raw = "THIS IS NOT HTTP\r\n\r\n";
  } else if (path == "/silent") {
    r.close_without_reply = true;
  } else if (path == "/gzip") {
    r.headers = {{"Content-Type", "text/plain"}, {"Content-Encoding", "gzip"}};
    r.body = Gzip(std::string(5000, 'z') + "end");
  } else {
    r.body = "page " + path;
  }
  return r;
}

TEST_CASE("Fetcher: a page, with the request and response heads kept for WARC",
          "[engine][fetcher]") {
  HttpTestServer server(Route);
  FetchOptions o;
  o.user_agent = "test-agent/1.0";
  auto f = MakeFetcher(o);
  FetchResult r = FetchOne(*f, server.Url("/page.html"));
  CHECK(r.error == FetchError::kNone);
  CHECK(r.status == 200);
  CHECK(r.body == "<html><a href=x>x</a></html>");
  CHECK(r.content_type == "text/html");
  CHECK(r.charset == "iso-8859-1");
  CHECK(r.ip == "127.0.0.1");
  CHECK_THAT(r.request_head, Catch::StartsWith("GET /page.html HTTP/1.1\r\n"));
  CHECK_THAT(r.request_head, Catch::Contains("User-Agent: test-agent/1.0"));
  CHECK_THAT(r.response_head, Catch::StartsWith("HTTP/1.1 200"));
  CHECK_THAT(r.response_head, Catch::EndsWith("\r\n\r\n"));
  // The validators a revisit sends back ([recrawl]).
  CHECK(r.etag == "\"v2\"");
  CHECK(r.last_modified == "Fri, 27 Nov 2026 12:00:00 GMT");
  FetchResult missing = FetchOne(*f, server.Url("/missing"));
  CHECK(missing.etag.empty());
  CHECK(missing.last_modified.empty());
  // Extra request headers (a revisit's conditional GET) are sent.
  FetchResult conditional;
  f->Add(server.Url("/page.html"), {"If-None-Match: \"v2\""},
         [&conditional](FetchResult&& got) { conditional = std::move(got); });
  while (f->Run(std::chrono::milliseconds(100)) > 0) {
  }
  CHECK_THAT(conditional.request_head, Catch::Contains("If-None-Match: \"v2\"\r\n"));
}

TEST_CASE("Fetcher: fetch.resolve maps a name to an address without DNS",
          "[engine][fetcher]") {
  HttpTestServer server(Route);
  const std::string port = std::to_string(server.port());
  FetchOptions o;
  o.resolve = {"www.example.invalid:" + port + ":127.0.0.1"};
  auto f = MakeFetcher(o);
  FetchResult r = FetchOne(*f, "http://www.example.invalid:" + port + "/page.html");
  CHECK(r.error == FetchError::kNone);
  CHECK(r.status == 200);
  CHECK(r.ip == "127.0.0.1");
  // The Host header keeps the name (virtual hosts work).
  CHECK_THAT(r.request_head, Catch::Contains("Host: www.example.invalid:" + port));
}

TEST_CASE("Fetcher: 404 is a result, a redirect is not followed", "[engine][fetcher]") {
  HttpTestServer server(Route);
  auto f = MakeFetcher();
  auto results = FetchAll(*f, {server.Url("/missing"), server.Url("/moved")});
  CHECK(results[server.Url("/missing")].status == 404);
  CHECK(results[server.Url("/missing")].error == FetchError::kNone);
  const FetchResult& moved = results[server.Url("/moved")];
  CHECK(moved.status == 301);
  CHECK(moved.location == "/page.html");
  CHECK(server.requests() == 2);  // the redirect target was not fetched
}

TEST_CASE("Fetcher: a body over the cap is cut and marked truncated",
          "[engine][fetcher]") {
  HttpTestServer server(Route);
  FetchOptions o;
  o.max_body_bytes = 10'000;
  auto f = MakeFetcher(o);
  FetchResult r = FetchOne(*f, server.Url("/big"));
  CHECK(r.truncated);
  CHECK(r.error == FetchError::kTooLarge);
  CHECK(r.body.size() == 10'000);
  CHECK(r.status == 200);
}

TEST_CASE("Fetcher: a body past spool_body_bytes waits in an unlinked file, not in RAM",
          "[engine][fetcher]") {
  HttpTestServer server(Route);
  const std::string dir = testing::TempDir("spool");
  FetchOptions o;
  o.spool_dir = dir + "/spool";
  o.spool_body_bytes = 10'000;
  o.max_body_bytes = 60'000;
  auto f = MakeFetcher(o);
  auto results = FetchAll(*f, {server.Url("/big"), server.Url("/page.html")});
  const FetchResult& big = results[server.Url("/big")];
  const FetchResult& small = results[server.Url("/page.html")];
  // Cut at max_body_bytes as in RAM, the bytes the same.
  CHECK(big.body.spooled());
  CHECK(big.truncated);
  CHECK(big.body == std::string(60'000, 'b'));
  CHECK_FALSE(small.body.spooled());
  CHECK(small.body == "<html><a href=x>x</a></html>");
  // The files have no names: nothing to clean up, even after a kill -9.
  CHECK(std::filesystem::is_empty(o.spool_dir));
  // Moved, the body keeps its mapping; copied, it is held in RAM.
  FetchResult moved = std::move(results[server.Url("/big")]);
  CHECK(moved.body.size() == 60'000);
  Body copy = moved.body;
  CHECK_FALSE(copy.spooled());
  CHECK(copy == moved.body.view());

  // A spool directory that goes away: the fetch fails, naming the file; a
  // failure the crawl fetches again later (a full or read-only disk).
  std::filesystem::remove_all(o.spool_dir);
  FetchResult lost = FetchOne(*f, server.Url("/big"));
  CHECK(lost.error == FetchError::kSpool);
  CHECK(Transient(lost));
  CHECK(lost.error_message.find("spool file in " + o.spool_dir) != std::string::npos);
  // One that cannot be made: Create says so.
  std::ofstream(dir + "/file") << "x";
  o.spool_dir = dir + "/file/spool";
  auto refused = Fetcher::Create(o);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("spool directory " + o.spool_dir) !=
        std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "Body::OpenSpool without O_TMPFILE (NFS): mkostemp and unlink, nothing left by "
    "name; ClearSpool removes what a crash left",
    "[engine][fetcher]") {
  const std::string dir = testing::TempDir("spool-fallback");
  std::filesystem::create_directories(dir);
  const int fd = Body::OpenSpool(dir, /*tmpfile=*/false);
  REQUIRE(fd >= 0);
  CHECK(::write(fd, "abc", 3) == 3);
  CHECK(std::filesystem::is_empty(dir));  // unlinked at once
  ::close(fd);
  std::ofstream(dir + "/spool-left") << "x";  // a crash between create and unlink
  std::ofstream(dir + "/other") << "x";
  Body::ClearSpool(dir);
  CHECK_FALSE(std::filesystem::exists(dir + "/spool-left"));
  CHECK(std::filesystem::exists(dir + "/other"));
  Body::ClearSpool(dir + "/none");  // no such directory: nothing to do
  std::filesystem::remove_all(dir);
}

TEST_CASE("Body::RamBytes: the heap every body in RAM holds, none once spooled or gone",
          "[engine][fetcher][memory]") {
  const uint64_t before = Body::RamBytes();
  const std::string dir = testing::TempDir("body_ram");
  {
    Body a;
    a.SpoolPast(100'000, dir);
    const std::string chunk(4096, 'a');
    for (int i = 0; i < 10; ++i) REQUIRE(a.Append(chunk.data(), chunk.size()));
    CHECK(Body::RamBytes() - before >= 40'960);
    const uint64_t held = Body::RamBytes() - before;
    Body moved = std::move(a);  // the count moves with the buffer
    CHECK(Body::RamBytes() - before == held);
    Body copy = moved;  // a copy holds a buffer of its own
    CHECK(Body::RamBytes() - before >= held + 40'960);
    // Past the threshold the body goes to its file: its RAM is given back.
    for (int i = 0; i < 20; ++i) REQUIRE(moved.Append(chunk.data(), chunk.size()));
    REQUIRE(moved.spooled());
    CHECK(Body::RamBytes() - before < held + 50'000);
  }
  CHECK(Body::RamBytes() == before);
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "Fetcher: timeouts, refused connections, malformed and silent servers each end "
    "in one result naming the failure",
    "[engine][fetcher]") {
  HttpTestServer server(Route);
  FetchOptions o;
  o.timeout_s = 0.5;
  o.connect_timeout_s = 0.5;
  o.max_connections_per_host = 8;  // all at once: queueing time would count as timeout
  auto f = MakeFetcher(o);
  // A port where connections are refused, held for the whole test.
  testing::RefusedPort refused_port;
  const std::string refused =
      "http://127.0.0.1:" + std::to_string(refused_port.port()) + "/";

  auto results = FetchAll(*f, {server.Url("/slow"), refused, server.Url("/garbage"),
                               server.Url("/silent"), server.Url("/fine")});
  CHECK(results.size() == 5);
  CHECK(results[server.Url("/slow")].error == FetchError::kTimeout);
  CHECK(results[refused].error == FetchError::kConnect);
  CHECK(results[server.Url("/garbage")].error == FetchError::kProtocol);
  CHECK(results[server.Url("/silent")].error == FetchError::kProtocol);
  CHECK_FALSE(results[server.Url("/silent")].error_message.empty());
  CHECK(results[server.Url("/fine")].error ==
        FetchError::kNone);  // the others did not hurt it
  CHECK(results[server.Url("/fine")].body == "page /fine");
}

TEST_CASE(
    "Fetcher: Abandon ends the transfers it picks at once, each with a result marked "
    "abandoned; the others go on",
    "[engine][fetcher]") {
  HttpTestServer server(Route);
  auto f = MakeFetcher();
  std::map<std::string, FetchResult> out;
  for (const std::string& u : {server.Url("/slow"), server.Url("/fine")})
    f->Add(u, [&out](FetchResult&& r) { out[r.url] = std::move(r); });
  f->Run(std::chrono::milliseconds(50));  // both under way (/slow answers in 5 s)
  auto start = std::chrono::steady_clock::now();
  size_t n = f->Abandon([](const std::string& url) { return url.ends_with("/slow"); });
  CHECK(n == 1);
  REQUIRE(out.count(server.Url("/slow")) == 1);  // called before Abandon returned
  const FetchResult& slow = out[server.Url("/slow")];
  CHECK(slow.abandoned);
  CHECK(slow.status == 0);
  CHECK(slow.body.empty());
  while (f->Run(std::chrono::milliseconds(100)) > 0) {
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(4));
  CHECK_FALSE(out[server.Url("/fine")].abandoned);
  CHECK(out[server.Url("/fine")].body == "page /fine");
  CHECK(f->Abandon([](const std::string&) { return true; }) == 0);  // none left
}

TEST_CASE("Fetcher: gzip bodies are decoded", "[engine][fetcher]") {
  HttpTestServer server(Route);
  auto f = MakeFetcher();
  FetchResult r = FetchOne(*f, server.Url("/gzip"));
  CHECK(r.error == FetchError::kNone);
  CHECK(r.body == std::string(5000, 'z') + "end");
  CHECK_THAT(r.request_head, Catch::Contains("Accept-Encoding:"));
}

TEST_CASE("Fetcher: many transfers at once, connections kept alive and reused",
          "[engine][fetcher]") {
  HttpTestServer a(Route), b(Route), c(Route);
  FetchOptions o;
  o.max_connections = 6;
  o.max_connections_per_host =
      2;  // 3 hosts x 2 = 6: no connection has to be closed for another
  auto f = MakeFetcher(o);
  std::vector<std::string> urls;
  for (int i = 0; i < 300; ++i) {
    HttpTestServer& s = i % 3 == 0 ? a : i % 3 == 1 ? b : c;
    urls.push_back(s.Url("/p" + std::to_string(i)));
  }
  auto results = FetchAll(*f, urls);
  REQUIRE(results.size() == 300);
  for (const auto& [url, r] : results) {
    CHECK(r.error == FetchError::kNone);
    CHECK(r.body == "page " + url.substr(url.find('/', 8)));
  }
  CHECK(a.requests() + b.requests() + c.requests() == 300);
  // Keep-alive: each host's two connections carry all its 100 requests.
  CHECK(a.connections() + b.connections() + c.connections() <= 6);
}

TEST_CASE(
    "Fetcher::AddressFor: an address as it is, fetch.resolve's hosts at their (first) "
    "address, a name with no resolver unknown",
    "[engine][fetcher]") {
  FetchOptions o;
  o.resolve = {"routed.test:80:127.0.0.9", "two.test:80:127.0.0.7,127.0.0.8",
               "six.test:80:[::1]"};
  auto f = Fetcher::Create(o);
  REQUIRE(f.ok());
  CHECK((*f)->AddressFor("http://127.0.0.2:8080/x") ==
        std::optional<std::string>("127.0.0.2"));
  CHECK((*f)->AddressFor("http://[::1]:8080/") == std::optional<std::string>("::1"));
  // Routed by fetch.resolve: politeness per address holds for its robots.txt
  // too (it was "", unknown, and their robots.txt fetches went out at once).
  CHECK((*f)->AddressFor("http://routed.test/") ==
        std::optional<std::string>("127.0.0.9"));
  CHECK((*f)->AddressFor("http://two.test/") == std::optional<std::string>("127.0.0.7"));
  CHECK((*f)->AddressFor("http://six.test/") == std::optional<std::string>("::1"));
  CHECK((*f)->AddressFor("http://routed.test:81/") == std::optional<std::string>(""));
  // A name with no resolver: libcurl connects.
  CHECK((*f)->AddressFor("http://other.test/") == std::optional<std::string>(""));
  // Through a proxy the proxy connects: unknown.
  o.proxy = "http://127.0.0.1:1";
  auto proxied = Fetcher::Create(o);
  REQUIRE(proxied.ok());
  CHECK((*proxied)->AddressFor("http://routed.test/") == std::optional<std::string>(""));
}

}  // namespace
}  // namespace crawler::engine
