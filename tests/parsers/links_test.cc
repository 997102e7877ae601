// Link extraction (parsers/links.h) over hand-written HTML: every collected
// element, <base>, nofollow, meta robots, meta refresh, skipped schemes,
// broken markup, latin-1 and windows-1252 pages, and hostile inputs.
#include "parsers/links.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace crawler::parsers {
namespace {

std::vector<std::string> Urls(const ExtractResult& r) {
  std::vector<std::string> out;
  for (const Link& l : r.links) out.push_back(l.url);
  return out;
}

constexpr const char* kPage = "http://example.org/dir/page.html";

TEST_CASE("Links: every page-naming element, in document order", "[parsers][links]") {
  const char* html = R"(<!doctype html><html><head>
    <link rel="canonical" href="/canon">
    <link rel="alternate" hreflang="de" href="de.html">
    <link rel="next" href="p2"><link rel="prev" href="p0">
    <link rel="stylesheet" href="style.css">
    <meta http-equiv="Refresh" content="5; URL='later.html'">
    </head><body>
    <a href="a.html">a</a>
    <map><area href="area.html"></map>
    <iframe src="frame-i.html"></iframe>
    <a name="no-href">x</a>
    <img src="pic.png"><script src="app.js"></script>
    <a href="https://other.example/x#frag">o</a>
    </body></html>)";
  ExtractResult r = ExtractLinks(html, kPage, "utf-8");
  CHECK(Urls(r) == std::vector<std::string>{
                       "http://example.org/canon", "http://example.org/dir/de.html",
                       "http://example.org/dir/p2", "http://example.org/dir/p0",
                       "http://example.org/dir/later.html",
                       "http://example.org/dir/a.html",
                       "http://example.org/dir/area.html",
                       "http://example.org/dir/frame-i.html", "https://other.example/x"});
  CHECK(r.links[4].source == LinkSource::kMetaRefresh);
  CHECK(r.links[4].href == "later.html");
  CHECK(r.links[6].source == LinkSource::kArea);

  ExtractOptions assets;
  assets.include_assets = true;
  ExtractResult with_assets = ExtractLinks(html, kPage, "utf-8", assets);
  std::vector<std::string> urls = Urls(with_assets);
  for (const char* u :
       {"http://example.org/dir/style.css", "http://example.org/dir/pic.png",
        "http://example.org/dir/app.js"}) {
    CHECK(std::find(urls.begin(), urls.end(), u) != urls.end());
  }
  CHECK(urls.size() == 12);
}

TEST_CASE("Links: frameset frames", "[parsers][links]") {
  ExtractResult r = ExtractLinks(
      "<html><frameset><frame src='left.html'><frame src='right.html'></frameset></html>",
      kPage, "");
  CHECK(Urls(r) == std::vector<std::string>{"http://example.org/dir/left.html",
                                            "http://example.org/dir/right.html"});
  CHECK(r.links[0].source == LinkSource::kFrame);
}

TEST_CASE("Links: <base href> is honoured (the first one)", "[parsers][links]") {
  ExtractResult r = ExtractLinks(
      "<head><base href='http://cdn.example/root/'><base href='http://ignored/'></head>"
      "<a href='x'>x</a><a href='/y'>y</a>",
      kPage, "");
  CHECK(r.base == "http://cdn.example/root/");
  CHECK(Urls(r) ==
        std::vector<std::string>{"http://cdn.example/root/x", "http://cdn.example/y"});
  ExtractResult relative =
      ExtractLinks("<base href='../other/'><a href='z'>z</a>", kPage, "");
  CHECK(Urls(relative) == std::vector<std::string>{"http://example.org/other/z"});
}

TEST_CASE("Links: rel=nofollow per link, meta robots per page", "[parsers][links]") {
  ExtractResult r = ExtractLinks(
      "<meta name='ROBOTS' content='NoIndex, nofollow'>"
      "<a href='a' rel='external NOFOLLOW'>a</a><a href='b'>b</a>",
      kPage, "");
  REQUIRE(r.links.size() == 2);
  CHECK(r.links[0].nofollow);
  CHECK_FALSE(r.links[1].nofollow);
  CHECK(r.meta_nofollow);
  CHECK(r.meta_noindex);
  ExtractResult none = ExtractLinks("<meta name=robots content=none>", kPage, "");
  CHECK(none.meta_nofollow);
  CHECK(none.meta_noindex);
  ExtractResult plain =
      ExtractLinks("<meta name=robots content='index,follow'>", kPage, "");
  CHECK_FALSE(plain.meta_nofollow);
  CHECK_FALSE(plain.meta_noindex);
}

TEST_CASE("Links: skipped hrefs are counted by reason", "[parsers][links]") {
  std::string html =
      "<a href='javascript:void(0)'>j</a><a href=' JavaScript:x()'>j</a>"
      "<a href='mailto:me@example.org'>m</a><a href='data:text/plain,hi'>d</a>"
      "<a href='ftp://files.example/x'>f</a><a href='tel:+123'>t</a>"
      "<a href='http://a:99999/'>bad port</a><a href='/%zz'>stray %</a>"
      "<a href='/" +
      std::string(5000, 'x') + "'>long</a><a href='ok'>ok</a>";  // NOLINT
  ExtractResult r = ExtractLinks(html, kPage, "");
  CHECK(Urls(r) == std::vector<std::string>{"http://example.org/%25zz",
                                            "http://example.org/dir/ok"});
  CHECK(r.skipped.javascript == 2);
  CHECK(r.skipped.mailto == 1);
  CHECK(r.skipped.data == 1);
  CHECK(r.skipped.other_scheme == 2);
  CHECK(r.skipped.unparsable == 1);
  CHECK(r.skipped.too_long == 1);
}

TEST_CASE("Links: broken markup is recovered as a browser would", "[parsers][links]") {
  ExtractResult r = ExtractLinks(
      "<p><a href=one.html>one<a href=\"two.html\">two</p><div><a href='three.html'"
      "<table><tr><td><a href=four.html>four</table></b></i><a href=five.html",
      kPage, "");
  std::vector<std::string> urls = Urls(r);
  for (const char* u :
       {"http://example.org/dir/one.html", "http://example.org/dir/two.html",
        "http://example.org/dir/four.html"}) {
    CHECK(std::find(urls.begin(), urls.end(), u) != urls.end());
  }
}

TEST_CASE("Links: a latin-1 / windows-1252 page keeps its ASCII links",
          "[parsers][links][charset]") {
  // "Café – Über" in windows-1252 around ASCII links, one with a latin-1 path.
  const std::string html =
      "<html><body>Caf\xE9 \x96 \xDC"
      "ber <a href='/menu.html'>Men\xFC</a>"
      "<a href='/caf\xE9.html'>x</a></body></html>";
  for (const char* charset : {"iso-8859-1", "windows-1252", ""}) {
    INFO("charset '" << charset << "'");
    ExtractResult r = ExtractLinks(html, kPage, charset);
    CHECK(Urls(r) == std::vector<std::string>{"http://example.org/menu.html",
                                              "http://example.org/caf%C3%A9.html"});
  }
  // An unknown charset: ASCII links still survive.
  ExtractResult r = ExtractLinks(html, kPage, "koi8-r");
  REQUIRE_FALSE(r.links.empty());
  CHECK(r.links[0].url == "http://example.org/menu.html");
  CHECK(Windows1252ToUtf8("\x80\xE9") == "\xE2\x82\xAC\xC3\xA9");
}

TEST_CASE(
    "Links: hostile inputs (20,000-deep nesting, a 1 MB attribute, 1,000 attributes, "
    "binary) give the right links",
    "[parsers][links]") {
  // Deep nesting.
  std::string deep;
  for (int i = 0; i < 20000; ++i) deep += "<div>";
  deep += "<a href='deep.html'>x</a>";
  ExtractResult r = ExtractLinks(deep, kPage, "");
  CHECK(Urls(r) == std::vector<std::string>{"http://example.org/dir/deep.html"});
  // A huge attribute value and many attributes.
  std::string huge = "<a href='/";  // built by append: GCC 12 -Wrestrict misfires on +
  huge.append(1 << 20, 'a');
  huge += "' ";
  for (int i = 0; i < 1000; ++i) {
    huge += 'x';
    huge += std::to_string(i);
    huge += "=1 ";
  }
  huge += ">x</a><a href='after.html'>y</a>";
  ExtractResult h = ExtractLinks(huge, kPage, "");
  CHECK(Urls(h) == std::vector<std::string>{"http://example.org/dir/after.html"});
  CHECK(h.skipped.too_long == 1);
  // Empty and binary input.
  CHECK(ExtractLinks("", kPage, "").links.empty());
  std::string binary(4096, '\0');
  for (size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<char>(i * 7919);
  (void)ExtractLinks(binary, kPage, "");
  SUCCEED("no crash");
}

}  // namespace
}  // namespace crawler::parsers
