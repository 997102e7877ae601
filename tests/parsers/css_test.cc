// Page requisites from CSS (parsers/css.h) and the HTML elements that load
// them (parsers/links.h, include_assets): each form CSS Syntax Level 3
// allows a URL in, escapes, comments, bad tokens that must not swallow the
// next URL, and resolution against the stylesheet's own URL.
#include "parsers/css.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "parsers/links.h"

namespace crawler::parsers {
namespace {

using Strings = std::vector<std::string>;

TEST_CASE("CSS: url(), url(\"\"), @import, src(), image-set(), in document order",
          "[parsers][css]") {
  CHECK(CssUrls("a{background:url(a.png)}") == Strings{"a.png"});
  CHECK(CssUrls("a{background:URL( 'b.png' )} b{x:url( \"c.png\" )}") ==
        Strings{"b.png", "c.png"});
  CHECK(CssUrls("@import \"d.css\";\n@import url(e.css) screen;@IMPORT 'f.css' print;") ==
        Strings{"d.css", "e.css", "f.css"});
  CHECK(CssUrls("@import /* why */ \"g.css\";") == Strings{"g.css"});
  CHECK(CssUrls("@font-face{src:url(o.woff2) format(\"woff2\"), url(p.woff) "
                "format('woff')}") == Strings{"o.woff2", "p.woff"});
  CHECK(
      CssUrls("a{b:image-set(\"l.png\" 1x, url(m.png) 2x, 'n.png' type('image/png'))}") ==
      Strings{"l.png", "m.png", "n.png"});
  CHECK(CssUrls("a{b:-webkit-image-set('w.png' 1x)} c{d:src(\"s.svg\")}") ==
        Strings{"w.png", "s.svg"});
  // Strings that are no URL.
  CHECK(CssUrls("a::before{content:\"q.png\"} @media print{a{quotes:'x' 'y'}} "
                "@charset \"utf-8\"; @namespace svg \"http://w3.org/2000/svg\";")
            .empty());
  CHECK(CssUrls("@import foo \"r.css\";").empty());
}

TEST_CASE("CSS: comments, escapes and bad tokens", "[parsers][css]") {
  CHECK(CssUrls("/* url(no.png) @import 'no.css'; */ a{b:url(yes.png)}") ==
        Strings{"yes.png"});
  CHECK(CssUrls("a{b:url(g\\(1\\).png)}") == Strings{"g(1).png"});
  CHECK(CssUrls("a{b:u\\72 l(h.png)}") == Strings{"h.png"});  // \72 is 'r'
  CHECK(CssUrls("a{b:url(\"i\\\"j.png\")}") == Strings{"i\"j.png"});
  CHECK(CssUrls("a{b:url(\\6b.png)}") == Strings{"k.png"});
  CHECK(CssUrls("a{b:url(\"long\\\nline.png\")}") == Strings{"longline.png"});
  // Bad urls are skipped to their ')', and what follows is still found.
  CHECK(CssUrls("a{b:url(a b.png) url(a\"b.png) url(a(b.png) url(ok.png)}") ==
        Strings{"ok.png"});
  // A bad string (an unescaped newline) is no URL; the next one is. (Its
  // closing quote opens a string to the end of the line, as in a browser.)
  CHECK(CssUrls("a{b:url(\"x\n.png\")}\nc{d:url(after.png)}") == Strings{"after.png"});
  // The end of the input ends an open comment, string or url token.
  CHECK(CssUrls("a{b:url(t.png") == Strings{"t.png"});
  CHECK(CssUrls("@import 'u.css") == Strings{"u.css"});
  CHECK(CssUrls("a{b:url(v.png)} /* open").size() == 1);
  CHECK(CssUrls("").empty());
  CHECK(CssUrls("url()").empty());
  CHECK(CssUrls("\\").empty());
  // Deep nesting and long inputs: linear, no recursion.
  CHECK(CssUrls(std::string(1 << 20, '(') + "url(deep.png)") == Strings{"deep.png"});
  CHECK(CssUrls(std::string(1 << 20, ')') + "url(z.png)") == Strings{"z.png"});
}

TEST_CASE("CSS links: resolved against the stylesheet's URL; data: URIs skipped",
          "[parsers][css]") {
  ExtractResult r = ExtractCssLinks(
      "@import 'theme/base.css'; a{b:url(../img/x.png)} "
      "c{d:url(data:image/png;base64,AA)}"
      " e{f:url(//cdn.example.net/f.woff2)} g{h:url('javascript:alert(1)')}",
      "http://example.org/css/site.css");
  Strings urls;
  for (const Link& l : r.links) {
    urls.push_back(l.url);
    CHECK(l.source == LinkSource::kCss);
  }
  CHECK(urls == Strings{"http://example.org/css/theme/base.css",
                        "http://example.org/img/x.png",
                        "http://cdn.example.net/f.woff2"});
  CHECK(r.skipped.data == 1);
  CHECK(r.skipped.javascript == 1);
}

TEST_CASE(
    "Links: page requisites with include_assets: srcset, media, icons, preloads, "
    "<style> and style=\"\"",
    "[parsers][css][links]") {
  const char* html = R"html(<!doctype html><html><head>
    <base href="http://example.org/base/">
    <link rel="stylesheet" href="s.css"><link rel="icon" href="fav.ico">
    <link rel="apple-touch-icon" href="touch.png"><link rel="preload" href="f.woff2" as="font">
    <link rel="modulepreload" href="m.js"><link rel="manifest" href="app.webmanifest">
    <style>@import "imported.css"; body{background:url(bg.png)}</style>
    </head><body>
    <div style="background-image:url('div.png')">x</div>
    <img src="a.png" srcset="a-1x.png 1x, a-2x.png 2x,a-3x.png 3x">
    <img srcset="w,comma.png 100w, tail.png,, e.png (max-width: 10px, x) 50w">
    <picture><source srcset="p.webp" type="image/webp"></picture>
    <video poster="poster.jpg" src="v.webm"><source src="v.mp4"><track src="t.vtt"></video>
    <audio src="a.ogg"></audio><embed src="e.swf"><input type="image" src="go.png">
    <input type="text" src="no.png">
    </body></html>)html";
  ExtractOptions assets;
  assets.include_assets = true;
  ExtractResult r = ExtractLinks(html, "http://example.org/page.html", "utf-8", assets);
  Strings urls;
  for (const Link& l : r.links)
    urls.push_back(l.url.substr(std::string("http://example.org/base/").size()));
  CHECK(urls == Strings{"s.css",    "fav.ico",         "touch.png",    "f.woff2",
                        "m.js",     "app.webmanifest", "imported.css", "bg.png",
                        "div.png",  "a.png",           "a-1x.png",     "a-2x.png",
                        "a-3x.png", "w,comma.png",     "tail.png",     "e.png",
                        "p.webp",   "poster.jpg",      "v.webm",       "v.mp4",
                        "t.vtt",    "a.ogg",           "e.swf",        "go.png"});
  // Without include_assets: none of them (no page names any).
  ExtractResult pages = ExtractLinks(html, "http://example.org/page.html", "utf-8");
  CHECK(pages.links.empty());
}

}  // namespace
}  // namespace crawler::parsers
