// The JavaScript site of `crawler-testsite --js` (js_main.cc): pages whose
// links, text and images a script makes, beside static ones, for the
// crawler's [browser] rendering (docs/rendering.md). One host; every page
// generated from memory; the same content every run.
//
//   /                      static: text, links to every part below
//   /static/1..3.html      static pages, linked in a chain
//   /app/                  an application root: <div id="root"></div>, a
//                          <noscript> asking for JavaScript, a script that
//                          fetch()es /api/app.json and builds links to
//                          /app/item/1..5.html
//   /scroll/               an infinite scroll: batches of /api/feed/1..4.json
//                          loaded as the reader nears the end, 5 items each,
//                          each linking /scroll/item/N.html (N 1..20)
//   /lazy/                 images far down: <img loading=lazy> (in the HTML)
//                          and data-src images an IntersectionObserver loads
//                          (/lazy/io/1..3.png: only a browser that scrolls)
//   /loader/               a spinner for 1.5 s (a timer, no request), then
//                          /api/loader.json's content, linking
//                          /loader/done.html
//   /poll/                 polls /api/poll.json every 100 ms forever (never
//                          idle); links /poll/done.html at once
//   /jump/                 sets location.href to /jump/target.html after
//                          300 ms
//
// Truth(rendering): what a crawl must archive (pages, and with rendering
// the scripts, JSON and images the pages load): without rendering only the
// static links (/, /static/*, the part roots); with it every URL above.
// robots.txt is 404 and is in neither.
#pragma once

#include <string>
#include <vector>

#include "server_parts.h"

namespace crawler::testsite {

struct JsPage {
  int status = 200;
  std::string content_type = "text/html";
  std::string body;
};

class JsSite {
 public:
  static constexpr int kAppItems = 5;
  static constexpr int kFeedBatches = 4;
  static constexpr int kFeedPerBatch = 5;
  static constexpr int kLazyImages = 3;

  JsSite() = default;

  JsPage Get(const std::string& path) const {
    if (path == "/") return Html("Index", Text(4) + Index());
    for (int i = 1; i <= 3; ++i) {
      if (path == "/static/" + std::to_string(i) + ".html") {
        const std::string next =
            i < 3 ? "<a href=\"/static/" + std::to_string(i + 1) + ".html\">next</a>"
                  : "";
        return Html("Static " + std::to_string(i), Text(3) + next);
      }
    }
    if (path == "/app/") {
      return Html("App",
                  "<div id=\"root\"></div><noscript>You need to enable JavaScript to "
                  "run this app.</noscript><script src=\"/app/app.js\"></script>");
    }
    if (path == "/app/app.js") {
      return Script(
          "fetch('/api/app.json').then(r => r.json()).then(items => {"
          " const root = document.getElementById('root');"
          " for (const i of items) { const p = document.createElement('p');"
          " p.textContent = 'Item ' + i + ': ' + 'words '.repeat(40);"
          " const a = document.createElement('a'); a.href = '/app/item/' + i + '.html';"
          " a.textContent = 'item ' + i; p.appendChild(a); root.appendChild(p); } });");
    }
    if (path == "/api/app.json") return Json(List(kAppItems));
    if (Item(path, "/app/item/", kAppItems)) return Html("App item", Text(2));
    if (path == "/scroll/") {
      return Html("Feed",
                  "<h1>Feed</h1><div id=\"feed\"></div><p id=\"end\">loading</p>"
                  "<script src=\"/scroll/feed.js\"></script>");
    }
    if (path == "/scroll/feed.js") return Script(FeedScript());
    for (int b = 1; b <= kFeedBatches; ++b) {
      if (path == "/api/feed/" + std::to_string(b) + ".json") {
        std::string items;
        for (int i = 1; i <= kFeedPerBatch; ++i) {
          items += (i > 1 ? "," : "") + std::to_string((b - 1) * kFeedPerBatch + i);
        }
        return Json("{\"items\":[" + items +
                    "],\"more\":" + (b < kFeedBatches ? "true" : "false") + "}");
      }
    }
    if (Item(path, "/scroll/item/", kFeedBatches * kFeedPerBatch))
      return Html("Feed item", Text(2));
    if (path == "/lazy/") return Html("Gallery", Text(2) + Lazy());
    if (path == "/lazy/lazy.js") return Script(LazyScript());
    for (const char* dir : {"/lazy/img/", "/lazy/io/"}) {
      for (int i = 1; i <= kLazyImages; ++i) {
        if (path == dir + std::to_string(i) + ".png") return Png();
      }
    }
    if (path == "/loader/") {
      return Html("Loading",
                  "<div id=\"spin\">Loading...</div><div id=\"content\"></div>"
                  "<script src=\"/loader/loader.js\"></script>");
    }
    if (path == "/loader/loader.js") {
      return Script(
          "setTimeout(() => fetch('/api/loader.json').then(r => r.json()).then(d => {"
          " document.getElementById('spin').remove();"
          " document.getElementById('content').innerHTML = d.html; }), 1500);");
    }
    if (path == "/api/loader.json") {
      return Json(
          "{\"html\":\"<p>Loaded at last.</p><a "
          "href=\\\"/loader/done.html\\\">done</a>\"}");
    }
    if (path == "/poll/") {
      return Html("Live", "<p id=\"n\">0</p><script src=\"/poll/poll.js\"></script>");
    }
    if (path == "/poll/poll.js") {
      return Script(
          "const a = document.createElement('a'); a.href = '/poll/done.html';"
          " a.textContent = 'done'; document.body.appendChild(a);"
          " setInterval(() => fetch('/api/poll.json', {cache: 'no-store'})"
          ".then(r => r.json()).then(d => { document.getElementById('n').textContent ="
          " d.n; }), 100);");
    }
    if (path == "/api/poll.json") return Json("{\"n\":1}");
    if (path == "/jump/") {
      return Html("Jump", "<p>Moving...</p><script src=\"/jump/jump.js\"></script>");
    }
    if (path == "/jump/jump.js") {
      return Script("setTimeout(() => { location.href = '/jump/target.html'; }, 300);");
    }
    for (const char* page :
         {"/loader/done.html", "/poll/done.html", "/jump/target.html"}) {
      if (path == page) return Html("End", Text(2));
    }
    return {404, "text/plain", "not found\n"};
  }

  // The paths a crawl must archive (see the header), sorted as listed.
  std::vector<std::string> Truth(bool rendering) const {
    std::vector<std::string> t = {
        "/",        "/static/1.html", "/static/2.html", "/static/3.html", "/app/",
        "/scroll/", "/lazy/",         "/loader/",       "/poll/",         "/jump/"};
    if (!rendering) return t;
    for (const char* p :
         {"/app/app.js", "/api/app.json", "/scroll/feed.js", "/lazy/lazy.js",
          "/loader/loader.js", "/api/loader.json", "/loader/done.html", "/poll/poll.js",
          "/api/poll.json", "/poll/done.html", "/jump/jump.js", "/jump/target.html"}) {
      t.emplace_back(p);
    }
    for (int i = 1; i <= kAppItems; ++i)
      t.push_back("/app/item/" + std::to_string(i) + ".html");
    for (int b = 1; b <= kFeedBatches; ++b)
      t.push_back("/api/feed/" + std::to_string(b) + ".json");
    for (int i = 1; i <= kFeedBatches * kFeedPerBatch; ++i)
      t.push_back("/scroll/item/" + std::to_string(i) + ".html");
    for (int i = 1; i <= kLazyImages; ++i) {
      t.push_back("/lazy/img/" + std::to_string(i) + ".png");
      t.push_back("/lazy/io/" + std::to_string(i) + ".png");
    }
    return t;
  }

 private:
  static JsPage Html(const std::string& title, const std::string& body) {
    return {200, "text/html",
            "<!DOCTYPE html><html><head><title>" + title + "</title></head><body>" +
                body + "</body></html>\n"};
  }
  static JsPage Script(std::string js) {
    return {200, "application/javascript", std::move(js)};
  }
  static JsPage Json(std::string json) {
    return {200, "application/json", std::move(json)};
  }
  static JsPage Png() { return {200, "image/png", OnePixelPng()}; }
  // `paragraphs` paragraphs of prose (a page a reader can read without a
  // script).
  static std::string Text(int paragraphs) {
    std::string t;
    for (int i = 0; i < paragraphs; ++i) {
      t += "<p>This page is plain HTML, written on the server, and reads the same with "
           "or without a script. Paragraph " +
           std::to_string(i + 1) +
           " says so at length, so that a reader, or a crawler looking at the text, "
           "finds enough of it here to know no browser is needed.</p>";
    }
    return t;
  }
  static std::string Index() {
    std::string links;
    for (const char* p : {"/static/1.html", "/app/", "/scroll/", "/lazy/", "/loader/",
                          "/poll/", "/jump/"}) {
      links += "<li><a href=\"" + std::string(p) + "\">" + p + "</a></li>";
    }
    return "<ul>" + links + "</ul>";
  }
  static std::string List(int n) {
    std::string s = "[";
    for (int i = 1; i <= n; ++i) s += (i > 1 ? ",\"" : "\"") + std::to_string(i) + "\"";
    return s + "]";
  }
  static bool Item(const std::string& path, const std::string& dir, int n) {
    for (int i = 1; i <= n; ++i) {
      if (path == dir + std::to_string(i) + ".html") return true;
    }
    return false;
  }
  // Each item a window tall: the next batch is asked for when the reader is
  // within a window of the end.
  static std::string FeedScript() {
    return "let next = 1, busy = false, more = true;"
           " function load() { if (busy || !more) return; busy = true;"
           " fetch('/api/feed/' + next + '.json').then(r => r.json()).then(d => {"
           " for (const i of d.items) { const div = document.createElement('div');"
           " div.style.height = window.innerHeight + 'px';"
           " const a = document.createElement('a'); a.href = '/scroll/item/' + i + "
           "'.html';"
           " a.textContent = 'item ' + i; div.appendChild(a);"
           " document.getElementById('feed').appendChild(div); }"
           " next++; more = d.more; busy = false;"
           " if (!more) document.getElementById('end').textContent = 'the end'; }); }"
           " window.addEventListener('scroll', () => {"
           " if (window.scrollY + 2 * window.innerHeight >= document.body.scrollHeight)"
           " load(); });"
           " load();";
  }
  static std::string Lazy() {
    std::string s;
    for (int i = 1; i <= kLazyImages; ++i) {
      const std::string n = std::to_string(i);
      s += "<img loading=\"lazy\" alt=\"lazy " + n + "\" src=\"/lazy/img/" + n +
           ".png\" style=\"display:block;width:10px;height:10px;margin-top:1500px\">";
      s += "<img class=\"io\" alt=\"observed " + n + "\" data-src=\"/lazy/io/" + n +
           ".png\" style=\"display:block;width:10px;height:10px;margin-top:1500px\">";
    }
    return s + "<script src=\"/lazy/lazy.js\"></script>";
  }
  static std::string LazyScript() {
    return "const io = new IntersectionObserver(es => { for (const e of es) {"
           " if (e.isIntersecting) { e.target.src = e.target.dataset.src;"
           " io.unobserve(e.target); } } });"
           " document.querySelectorAll('img.io').forEach(i => io.observe(i));";
  }
};

}  // namespace crawler::testsite
