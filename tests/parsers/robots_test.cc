// robots.txt (parsers/robots.h) against RFC 9309: its section 5 examples, the
// special-character and percent-encoding tables of 2.2.2, longest match and
// ties, group selection, limits, fetch outcomes and warnings.
#include "parsers/robots.h"

#include <catch2/catch.hpp>
#include <string>

namespace crawler::parsers {
namespace {

constexpr const char* kSimpleExample =
    "User-Agent: *\n"
    "Disallow: *.gif$\n"
    "Disallow: /example/\n"
    "Allow: /publications/\n"
    "\n"
    "User-Agent: foobot\n"
    "Disallow:/\n"
    "Allow:/example/page.html\n"
    "Allow:/example/allowed.gif\n"
    "\n"
    "User-Agent: barbot\n"
    "User-Agent: bazbot\n"
    "Disallow: /example/page.html\n"
    "\n"
    "User-Agent: quxbot\n";

TEST_CASE("RFC 9309 5.1: simple example", "[parsers][robots][rfc9309]") {
  Robots foo = Robots::Parse(kSimpleExample, "FooBot/1.0");
  CHECK(foo.Allowed("/example/page.html"));
  CHECK(foo.Allowed("/example/allowed.gif"));
  CHECK_FALSE(foo.Allowed("/example/other.html"));
  CHECK_FALSE(foo.Allowed("/"));
  CHECK(foo.Allowed("/robots.txt"));  // always allowed

  for (const char* agent : {"barbot", "bazbot"}) {
    Robots bar = Robots::Parse(kSimpleExample, agent);
    CHECK_FALSE(bar.Allowed("/example/page.html"));
    CHECK(bar.Allowed("/example/other.html"));  // its own group, not "*"
    CHECK(bar.Allowed("/x.gif"));
  }

  Robots qux = Robots::Parse(kSimpleExample, "quxbot");  // a group with no rules
  CHECK(qux.Allowed("/example/page.html"));
  CHECK(qux.Allowed("/x.gif"));

  Robots other = Robots::Parse(kSimpleExample, "crawler");  // the "*" fallback
  CHECK_FALSE(other.Allowed("/x.gif"));
  CHECK_FALSE(other.Allowed("/example/"));
  CHECK(other.Allowed("/publications/"));
  CHECK(other.Allowed("/x.gif?y"));  // "$": the path must end there
}

TEST_CASE("RFC 9309 5.2: longest match", "[parsers][robots][rfc9309]") {
  Robots r = Robots::Parse(
      "User-Agent: foobot\n"
      "Allow: /example/page/\n"
      "Disallow: /example/page/disallowed.gif\n",
      "foobot");
  CHECK(r.Allowed("/example/page/"));
  CHECK(r.Allowed("/example/page/allowed.gif"));
  CHECK_FALSE(r.Allowed("/example/page/disallowed.gif"));
}

TEST_CASE("RFC 9309 2.2.2: allow wins a tie", "[parsers][robots][rfc9309]") {
  Robots r = Robots::Parse("user-agent: *\ndisallow: /page\nallow: /page\n", "x");
  CHECK(r.Allowed("/page"));
  Robots s = Robots::Parse("user-agent: *\nallow: /pag*\ndisallow: /page\n", "x");
  CHECK(s.Allowed("/page"));  // same length (5 octets): allow
  Robots t = Robots::Parse("user-agent: *\nallow: /p\ndisallow: /page\n", "x");
  CHECK_FALSE(t.Allowed("/page.html"));  // longer disallow wins
}

TEST_CASE("RFC 9309 2.2.3: special characters * and $", "[parsers][robots][rfc9309]") {
  auto m = [](const char* pattern, const char* path) {
    return RobotsPatternMatches(NormalizeRobotsPath(pattern), NormalizeRobotsPath(path));
  };
  for (const char* p : {"/index.php", "/filename.php", "/folder/filename.php",
                        "/folder/filename.php?parameters", "/folder/any.php.file.html",
                        "/filename.php/"}) {
    INFO(p);
    CHECK(m("/*.php", p));
  }
  CHECK_FALSE(m("/*.php", "/"));
  CHECK_FALSE(m("/*.php", "/windows.PHP"));
  for (const char* p : {"/filename.php", "/folder/filename.php"}) CHECK(m("/*.php$", p));
  for (const char* p :
       {"/filename.php?parameters", "/filename.php/", "/filename.php5", "/windows.PHP"}) {
    INFO(p);
    CHECK_FALSE(m("/*.php$", p));
  }
  for (const char* p : {"/fish", "/fish.html", "/fish/salmon.html", "/fishheads",
                        "/fishheads/yummy.html", "/fish.php?id=anything"}) {
    CHECK(m("/fish*", p));
  }
  for (const char* p : {"/Fish.asp", "/catfish", "/?id=fish", "/desert/fish"}) {
    CHECK_FALSE(m("/fish*", p));
  }
  CHECK(m("/a*b*c$", "/axxbyyc"));
  CHECK_FALSE(m("/a*b*c$", "/axxbyycd"));
  CHECK(m("*", ""));
}

TEST_CASE("RFC 9309 2.2.2: percent-encoding is normalised before matching",
          "[parsers][robots][rfc9309]") {
  auto m = [](const char* pattern, const char* path) {
    return RobotsPatternMatches(NormalizeRobotsPath(pattern), NormalizeRobotsPath(path));
  };
  CHECK(m("/foo/bar?baz=quz", "/foo/bar?baz=quz"));
  CHECK(m("/foo/bar/\xE3\x83\x84", "/foo/bar/%E3%83%84"));
  CHECK(m("/foo/bar/%E3%83%84", "/foo/bar/%E3%83%84"));
  CHECK(m("/foo/bar/%e3%83%84", "/foo/bar/%E3%83%84"));
  CHECK(m("/foo/bar/%62%61%7A", "/foo/bar/baz"));
  CHECK(m("/~joe", "/%7Ejoe"));
  CHECK_FALSE(m("/a%2Fb", "/a/b"));  // an encoded slash is not a slash
}

TEST_CASE("Groups: case-insensitive product token, merged groups, * fallback",
          "[parsers][robots]") {
  const char* body =
      "User-agent: CRAWLER\nDisallow: /a\n\n"
      "User-agent: other\nDisallow: /\n\n"
      "user-agent: crawler/2.0\ndisallow: /b\ncrawl-delay: 2.5\n\n"
      "User-agent: *\nDisallow: /c\n";
  Robots r = Robots::Parse(body, "Crawler/0.1 (+https://example.org/bot)");
  CHECK_FALSE(r.Allowed("/a"));
  CHECK_FALSE(r.Allowed("/b"));
  CHECK(r.Allowed("/c"));  // a specific group exists: "*" does not apply
  REQUIRE(r.crawl_delay());
  CHECK(*r.crawl_delay() == 2.5);
  Robots star = Robots::Parse(body, "somebot");
  CHECK_FALSE(star.Allowed("/c"));
  CHECK(star.Allowed("/a"));
  CHECK_FALSE(star.crawl_delay());
}

TEST_CASE("Sitemaps, crawl-delay, comments, CRLF and warnings", "[parsers][robots]") {
  Robots r = Robots::Parse(
      "\xEF\xBB\xBF# comment\r\n"
      "Sitemap: https://example.org/sitemap.xml\r\n"
      "User-agent: * # all\r\n"
      "Crawl-delay: soon\r\n"
      "Disallow: /private # secret\r\n"
      "Noindex: /x\r\n"
      "this line has no colon\r\n"
      "Disallow:\r\n",
      "crawler");
  CHECK_FALSE(r.Allowed("/private/x"));
  CHECK(r.Allowed("/public"));
  REQUIRE(r.sitemaps().size() == 1);
  CHECK(r.sitemaps()[0] == "https://example.org/sitemap.xml");
  CHECK_FALSE(r.crawl_delay());
  REQUIRE(r.warnings().size() == 3);
  CHECK_THAT(r.warnings()[0],
             Catch::Contains("line 4") && Catch::Contains("crawl-delay"));
  CHECK_THAT(r.warnings()[1], Catch::Contains("line 6") && Catch::Contains("noindex"));
  CHECK_THAT(r.warnings()[2], Catch::Contains("line 7") && Catch::Contains("no ':'"));
  Robots orphan = Robots::Parse("Disallow: /\n", "x");
  CHECK(orphan.Allowed("/anything"));
  CHECK_THAT(orphan.warnings().at(0), Catch::Contains("before any user-agent"));
}

TEST_CASE("RFC 9309 2.3.1: fetch outcomes decide when there is no body",
          "[parsers][robots][rfc9309]") {
  CHECK(Robots::ForFetch(RobotsFetch::kClientError, "", "x").Allowed("/a"));
  CHECK(Robots::ForFetch(RobotsFetch::kTooManyRedirects, "", "x").Allowed("/a"));
  CHECK_FALSE(Robots::ForFetch(RobotsFetch::kServerError, "", "x").Allowed("/a"));
  CHECK_FALSE(Robots::ForFetch(RobotsFetch::kUnreachable, "", "x").Allowed("/a"));
  CHECK(Robots::ForFetch(RobotsFetch::kUnreachable, "", "x").Allowed("/robots.txt"));
  CHECK_FALSE(Robots::ForFetch(RobotsFetch::kOk, "user-agent: *\ndisallow: /a\n", "x")
                  .Allowed("/a"));
}

TEST_CASE("RFC 9309 2.5: only the first 500 KiB are parsed",
          "[parsers][robots][rfc9309]") {
  std::string body = "User-agent: *\nDisallow: /early\n";
  while (body.size() < kMaxRobotsBytes) body += "# padding padding padding padding\n";
  body += "Disallow: /late\n";
  Robots r = Robots::Parse(body, "x");
  CHECK(r.truncated());
  CHECK_FALSE(r.Allowed("/early"));
  CHECK(r.Allowed("/late"));
}

TEST_CASE("RFC 9309 2.1: an unknown record does not end a group",
          "[parsers][robots][rfc9309]") {
  Robots r = Robots::Parse(
      "User-agent: FooBot\n"
      "Unknown-Field: x\n"
      "User-agent: *\n"
      "Disallow: /\n",
      "FooBot/2.0");
  CHECK_FALSE(r.Allowed("/page"));  // FooBot and * are one group
  CHECK_FALSE(Robots::Parse("User-agent: FooBot\nUnknown-Field: x\nUser-agent: *\n"
                            "Disallow: /\n",
                            "other")
                  .Allowed("/page"));
  REQUIRE(r.warnings().size() == 1);
  CHECK_THAT(r.warnings()[0], Catch::Contains("unknown key 'unknown-field'"));
}

TEST_CASE("RFC 9309 2.2.2: a pattern over 4096 bytes is cut, not dropped",
          "[parsers][robots][rfc9309]") {
  std::string long_path = "/archive/" + std::string(5000, 'x');
  Robots r = Robots::Parse("User-agent: *\nDisallow: " + long_path + "\n", "x");
  CHECK_FALSE(r.Allowed(long_path));
  CHECK_FALSE(r.Allowed(long_path + "/more"));
  CHECK(r.Allowed("/archive/y"));
  REQUIRE(r.rules().size() == 1);
  CHECK(r.rules()[0].pattern.size() == 4096);
  CHECK_THAT(r.warnings().at(0), Catch::Contains("cut to its first 4096"));
  // Never inside an escape: "%2F" would otherwise become a raw "%2".
  std::string escaped = "/" + std::string(4093, 'a') + "%2Fb";
  Robots e = Robots::Parse("User-agent: *\nDisallow: " + escaped + "\n", "x");
  REQUIRE(e.rules().size() == 1);
  CHECK(e.rules()[0].pattern == "/" + std::string(4093, 'a'));
}

TEST_CASE("RFC 9309 2.2: a byte-order mark, whole or cut, keeps the first line",
          "[parsers][robots][rfc9309]") {
  for (const char* bom : {"\xEF\xBB\xBF", "\xEF\xBB", "\xEF"}) {
    Robots r = Robots::Parse(std::string(bom) + "User-agent: *\nDisallow: /x\n", "y");
    INFO(std::string(bom).size() << " BOM bytes");
    CHECK_FALSE(r.Allowed("/x"));
    CHECK(r.warnings().empty());
  }
}

TEST_CASE("RFC 9309 2.2: 'Disallow /' without a colon is read as 'Disallow: /'",
          "[parsers][robots][rfc9309]") {
  Robots r = Robots::Parse("User-agent *\nDisallow /private\n", "y");
  CHECK_FALSE(r.Allowed("/private/a"));
  CHECK(r.Allowed("/public"));
  REQUIRE(r.warnings().size() == 2);
  CHECK_THAT(r.warnings()[1],
             Catch::Contains("line 2") && Catch::Contains("read as 'key: value'"));
  // More than two words: ignored, as before.
  Robots three = Robots::Parse("User-agent: *\nDisallow / now\n", "y");
  CHECK(three.Allowed("/"));
  CHECK_THAT(three.warnings().at(0),
             Catch::Contains("no ':'") && !Catch::Contains("read as"));
}

TEST_CASE(
    "RFC 9309 2.2.3: a 2,000-wildcard pattern against a 2,000-byte path gives the right "
    "answer (its speed is not timed here)",
    "[parsers][robots]") {
  std::string pattern = "/";
  for (int i = 0; i < 2000; ++i) pattern += "*a";
  std::string path = "/" + std::string(2000, 'a') + "b";
  Robots r = Robots::Parse("User-agent: *\nDisallow: " + pattern + "$\n", "x");
  CHECK(r.Allowed(path));
}

}  // namespace
}  // namespace crawler::parsers
