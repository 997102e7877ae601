// crawler/src/scope.h: which URLs a crawl may fetch.
#include "engine/scope.h"

#include <catch2/catch.hpp>

namespace crawler::engine {
namespace {

TEST_CASE("Scope: by default the seeds' host keys (scheme, host and port), nothing else",
          "[engine][scope]") {
  CrawlConfig c;
  auto s = Scope::From(c, {"http://a.test/x", "https://b.test:8443/", "http://a.test/y"});
  REQUIRE(s.ok());
  CHECK(s->hosts() == std::vector<std::string>{"http://a.test", "https://b.test:8443"});
  CHECK(s->Allows("http://a.test/anything"));
  CHECK(s->Allows("https://b.test:8443/z"));
  CHECK_FALSE(s->Allows("https://a.test/x"));  // another scheme is another host key
  CHECK_FALSE(s->Allows("http://b.test/"));
  CHECK_FALSE(s->Allows("http://sub.a.test/"));
}

TEST_CASE(
    "Scope: scope_hosts by key or bare name, scope_domains by suffix at a label boundary",
    "[engine][scope]") {
  CrawlConfig c;
  c.scope_hosts = {"example.org", "http://c.test:81"};
  c.scope_domains = {"docs.test"};
  auto s = Scope::From(c, {"http://seed.test/"});
  REQUIRE(s.ok());
  CHECK_FALSE(s->Allows("http://seed.test/"));  // explicit lists replace the seeds' hosts
  CHECK(s->Allows("https://example.org/a"));
  CHECK(s->Allows("http://c.test:81/"));
  CHECK_FALSE(s->Allows("http://c.test/"));
  CHECK(s->Allows("http://docs.test/"));
  CHECK(s->Allows("http://api.docs.test/"));
  CHECK_FALSE(s->Allows("http://notdocs.test/"));
}

TEST_CASE("Scope: include must match (when given), exclude must not", "[engine][scope]") {
  CrawlConfig c;
  c.include = {"/docs/"};
  c.exclude = {"\\.pdf$"};
  auto s = Scope::From(c, {"http://a.test/"});
  REQUIRE(s.ok());
  CHECK(s->Allows("http://a.test/docs/x.html"));
  CHECK_FALSE(s->Allows("http://a.test/blog/x.html"));
  CHECK_FALSE(s->Allows("http://a.test/docs/x.pdf"));
}

TEST_CASE("Scope: a regex that does not compile is an error naming the keys",
          "[engine][scope]") {
  CrawlConfig c;
  c.exclude = {"(unclosed"};
  auto s = Scope::From(c, {"http://a.test/"});
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("crawl.include/exclude") != std::string::npos);
}

TEST_CASE("Scope: FromHosts restores the recorded host list", "[engine][scope]") {
  auto s = Scope::FromHosts(CrawlConfig{}, {"http://a.test"});
  REQUIRE(s.ok());
  CHECK(s->Allows("http://a.test/p"));
  CHECK_FALSE(s->Allows("http://b.test/p"));
}

TEST_CASE("Scope: a site is a registrable domain by the public suffix list (libpsl)",
          "[engine][scope]") {
  CHECK(SiteOf("static.example.org") == "example.org");
  CHECK(SiteOf("www.example.co.uk") == "example.co.uk");
  CHECK(SiteOf("example.co.uk") == "example.co.uk");
  CHECK(SiteOf("a.b.github.io") == "b.github.io");  // github.io is a public suffix
  CHECK(SiteOf("co.uk") == "co.uk");
  CHECK(SiteOf("h0.site.test") == "site.test");  // an unknown TLD: one label under it
  CHECK(SiteOf("127.0.0.1") == "127.0.0.1");     // addresses are sites of their own
  CHECK(SiteOf("10.0.0.1") != SiteOf("127.0.0.1"));
  CHECK(SiteOf("[::1]") == "[::1]");
}

TEST_CASE(
    "Scope: requisites by crawl.requisites_scope: site (a static host of the page's "
    "site), any (a CDN), scope; exclude still applies, include does not",
    "[engine][scope]") {
  CrawlConfig c;
  c.include = {"/docs/"};
  c.exclude = {"\\.exe$"};
  const std::string page = "https://www.example.org/docs/a.html";
  for (const char* mode : {"site", "any", "scope"}) {
    INFO(mode);
    c.requisites_scope = mode;
    auto s = Scope::From(c, {page});
    REQUIRE(s.ok());
    const std::string m = mode;
    CHECK(s->AllowsRequisite("https://www.example.org/docs/style.css", page));
    CHECK(s->AllowsRequisite("https://static.example.org/css/site.css", page) ==
          (m != "scope"));
    CHECK(s->AllowsRequisite("https://cdn.example.net/lib.js", page) == (m == "any"));
    CHECK_FALSE(s->AllowsRequisite("https://static.example.org/setup.exe", page));
    CHECK_FALSE(
        s->Allows("https://static.example.org/css/site.css"));  // pages: as before
  }
  // A stylesheet on the static host loads its own requisites from there.
  c.requisites_scope = "site";
  auto s = Scope::From(c, {page});
  REQUIRE(s.ok());
  CHECK(s->AllowsRequisite("https://static.example.org/font.woff2",
                           "https://static.example.org/css/site.css"));
}

}  // namespace
}  // namespace crawler::engine
