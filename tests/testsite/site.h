// The synthetic web that crawler-testsite serves, and the ground truth a
// correct crawl of it must produce. Everything is a pure function of the
// options (pages, hosts, base port, seed), so the server and the truth set
// agree by construction and a run can be repeated exactly.
//
// Host h (0 <= h < hosts) is http://127.0.0.1:(port + h), or with a virtual
// host domain D, http://h<h>.D:port (one port; the Host header picks the
// host, and a crawler maps the names to 127.0.0.1). Each host has its
// share of the pages: "/" is page 0, "/p/<i>.html" page i. A page is 5-60 KB
// with 20-100 links: in-site and cross-host, relative and absolute, some with
// a #fragment or an upper-case scheme (same URL after normalization), links
// to missing pages (404), to /private/ (disallowed by some robots.txt files),
// to non-HTML files and into short redirect chains. Every third page is sent
// gzip-encoded when the client accepts gzip.
//
// The root page of each host also links to the special paths:
//   /cal/<y>/<m>   a calendar trap: each month links to the next, forever.
//                  Only the root links into it, so month k sits at depth k+1
//                  and max_depth bounds it exactly.
//   /loop/a        302 -> /loop/b -> /loop/a (a redirect loop)
//   /r/long/8      a redirect chain of 8 hops, longer than max_redirects
//   /slow          answers after slow_ms
//   /huge          a body of huge_bytes (over the crawler's body limit)
//   /bad           not HTTP at all (a malformed response)
//   /status/500    a server error
// robots.txt by host index h % 4: 0 -> Disallow: /private/ (+ Crawl-delay if
// crawl_delay_s > 0); 1 -> 404 (allow all); 2 -> Disallow: /private/;
// 3 -> 500 (RFC 9309: disallow all).
//
// With orphans = N > 0, every host also has pages /orphan/<i>.html (i < N)
// that no link reaches, listed only in its sitemaps (a crawler with
// crawl.sitemaps = "robots", the default, finds those of hosts 0 and 2):
//   robots.txt (kinds 0, 2)  + "Sitemap: /sitemap-index.xml"
//   /sitemap-index.xml       an index: /sitemaps/a.xml, /sitemaps/b.xml.gz,
//                            /sitemaps/evil.xml, /sitemaps/nested.xml and
//                            itself (a loop)
//   /sitemaps/a.xml          the even orphans and "/" (already known)
//   /sitemaps/b.xml.gz       the odd orphans, gzip-compressed
//   /sitemaps/evil.xml       an XXE and a billion-laughs entity (nothing
//                            read or expanded, nothing fetched from it)
//   /sitemaps/nested.xml     an index of /sitemaps/nested2.xml, an index of
//                            /sitemaps/deep.xml: 3 levels below the first,
//                            past sitemap_max_depth (2), so deep.xml and its
//                            /orphan/deep.html are never fetched
//   /sitemap.xml             (all kinds) the orphans: only for
//                            crawl.sitemaps = "robots+default"
//
// With assets, every HTML page also loads page requisites (and the truth
// set is a crawl's with crawl.include_assets = true):
//   <link rel=stylesheet href=/static/site.css>, <link rel=icon
//   href=/static/favicon.ico>, <img src=/static/img/N.png
//   srcset=/static/img/N-2x.png 2x> (N = page % 8), <img
//   src=/static/img/logo.svg>; images are real PNGs and one SVG
//   /static/site.css         @import "theme/base.css", @import url() of
//                            theme/print.css, url(img/bg.png)
//   /static/theme/base.css   @font-face src: url(../fonts/body.woff2),
//                            url("../fonts/body.woff"); image-set("../img/h1.png")
//   /static/theme/print.css  only a url() inside a comment (not a link)
//   /static/img/*.png, /static/fonts/*  the images (PNG) and fonts
// With assets_host = N, pages load them from host N (absolute URLs): a
// static host of the same site when the hosts are virtual hosts. With
// asset_bytes = B, each stylesheet, image and font is padded to about B
// bytes (a CSS comment of words; bytes after a PNG's IEND, which browsers
// ignore), each its own. With asset_query, page i loads its stylesheet,
// images and icon as ...?v=i (cache busting): one payload under many URLs
// (the query is ignored; the stylesheet's own url()s carry none).
//
// Validators and change (a web to revisit). Every 200 carries an ETag and a
// Last-Modified, as nginx sends for static files, and a request whose
// If-None-Match names the ETag (or, without If-None-Match, whose
// If-Modified-Since is not before Last-Modified) is answered 304 with no
// body. With change_mean_s = M > 0 the HTML pages change over time: page i
// of host h changes as a Poisson process of its own rate 1 / (M * f), f
// log-uniform in [1/8, 8] (by the seed), from the site's time 0 (the
// server's epoch). With change_model "cho" the rates are shaped like the web
// Cho and Garcia-Molina measured (2000: over 20% of pages changed at every
// daily visit, about half not in four months): 20% of the pages change at
// 8 / M (many times between any two visits a crawl at M's scale makes),
// half never, and the other 30% as above. Its version at time t is the number of changes
// by then (Version; ChangeTime gives each one's time): the body names it and its text
// differs by it (its links do not, so the truth set is unchanged), the ETag is
// "h-i-VERSION" and Last-Modified the time of its last change. Everything else never
// changes. So a scheduler's freshness can be measured against the ground truth.
#ifndef TESTS_TESTSITE_SITE_H_
#define TESTS_TESTSITE_SITE_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gzip.h"
#include "rng.h"
#include "server_parts.h"

namespace crawler::testsite {

struct SiteOptions {
  uint32_t pages = 1000;  // over all hosts
  uint32_t hosts = 3;
  uint16_t port = 8000;  // host h listens on port + h
  uint64_t seed = 1;
  // The crawl the truth set is for (the crawler's defaults).
  uint32_t max_depth = 20;
  uint32_t max_redirects = 5;
  // Behaviour of the special paths.
  uint32_t slow_ms = 2000;
  uint32_t delay_ms = 0;  // every response waits this long (a latency-bound web)
  uint64_t huge_bytes = 12 * 1024 * 1024;
  double crawl_delay_s = 0;  // Crawl-delay of the h % 4 == 0 hosts (0: none)
  std::string vhost_domain;  // "": host h on port + h; else h<h>.<domain>:port
  uint32_t orphans = 0;      // pages per host reachable only from sitemaps
  // A sparse web: page i of host h links only to page i + 1 of host h + 1
  // (no special paths), so each page has one link to it, from another host.
  // A link lost on its way between two cluster nodes is never found again.
  bool sparse = false;
  bool assets = false;       // page requisites under /static/ (the top of this file)
  int32_t assets_host = -1;  // >= 0: every page's requisites are on that host
  uint32_t asset_bytes = 0;  // > 0: requisites padded to about this many bytes
  // > 0: each HTML page's text is page_bytes / 2 to 3 * page_bytes / 2 bytes
  // (the tests' sites: what they check does not grow with a page, the
  // parse, the gzip and the WARC do). 0: 5,000 to 60,000 (a real page's
  // spread, about 34 KB a page on average: the benchmarks').
  uint32_t page_bytes = 0;
  bool asset_query = false;  // page i loads its requisites as ...?v=i
  double change_mean_s = 0;  // > 0: HTML pages change (Poisson), this mean interval
  // How the pages' rates spread (the top of this file): "log-uniform" or "cho".
  std::string change_model = "log-uniform";
};

struct Page {
  int status = 200;
  std::string content_type = "text/html";
  std::string location;  // for 3xx
  std::string body;
  bool gzip_ok = false;  // may be sent gzip-encoded
  bool slow = false, huge = false, malformed = false;
  // Validators of a 200: the ETag (quoted) and the time of the last change,
  // in seconds after the site's time 0.
  std::string etag;
  double modified_s = 0;
};

class Site {
 public:
  explicit Site(const SiteOptions& o) : o_(o) {}

  const SiteOptions& options() const { return o_; }

  bool virtual_hosts() const { return !o_.vhost_domain.empty(); }
  // "HOST:PORT" of host h, as in its URLs and Host header.
  std::string Authority(uint32_t h) const {
    if (virtual_hosts())
      return "h" + std::to_string(h) + "." + o_.vhost_domain + ":" +
             std::to_string(o_.port);
    return "127.0.0.1:" + std::to_string(o_.port + h);
  }
  std::string Origin(uint32_t h) const { return "http://" + Authority(h); }
  // The host a Host header names (virtual hosts); false for none of ours.
  bool HostOf(std::string_view authority, uint32_t* h) const {
    std::string lowered(authority);
    for (char& c : lowered) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    std::string suffix = "." + o_.vhost_domain + ":" + std::to_string(o_.port);
    unsigned n = 0;
    char tail = 0;
    if (lowered.size() <= suffix.size() ||
        lowered.compare(lowered.size() - suffix.size(), suffix.size(), suffix) != 0 ||
        std::sscanf(lowered.c_str(), "h%u%c", &n, &tail) != 2 || tail != '.' ||
        n >= o_.hosts || Authority(n) != lowered) {
      return false;
    }
    *h = n;
    return true;
  }
  uint32_t PagesOn(uint32_t h) const {
    return o_.pages / o_.hosts + (h < o_.pages % o_.hosts ? 1 : 0);
  }
  int RobotsKind(uint32_t h) const { return static_cast<int>(h % 4); }

  // What host h serves at `path` (path without query or fragment) at `t`
  // seconds after the site's time 0, with its validators.
  Page Serve(uint32_t h, const std::string& path, double t = 0) const {
    Page p = ServeUnvalidated(h, path, t);
    if (p.status == 200 && p.etag.empty()) {
      uint32_t hash = 2166136261u;  // FNV-1a of the path: a file that never changes
      for (unsigned char c : path) hash = (hash ^ c) * 16777619u;
      p.etag = "\"s" + std::to_string(h) + "-" + std::to_string(hash) + "\"";
    }
    return p;
  }

  // The change rate of page i of host h, per second (0: it never changes).
  double ChangeRate(uint32_t h, uint32_t i) const {
    if (o_.change_mean_s <= 0) return 0;
    Rng rng{RngFor(h, i).s ^ 0x5bd1e9955bd1e995ULL};
    const double f = std::exp(std::log(1.0 / 8) + Unit(rng) * std::log(64.0));
    if (o_.change_model == "cho") {
      const double u = Unit(rng);
      if (u < 0.2) return 8 / o_.change_mean_s;
      if (u < 0.7) return 0;
    }
    return 1 / (o_.change_mean_s * f);
  }
  // The time of change v (v >= 1) of page i of host h; 0 for v = 0.
  double ChangeTime(uint32_t h, uint32_t i, uint64_t v) const {
    double t = 0;
    ForEachChange(h, i, [&](uint64_t k, double at) {
      t = at;
      return k < v;
    });
    return v == 0 ? 0 : t;
  }
  // The version of page i of host h at `t`: its changes by then.
  uint64_t Version(uint32_t h, uint32_t i, double t) const {
    uint64_t v = 0;
    ForEachChange(h, i, [&](uint64_t k, double at) {
      if (at > t) return false;
      v = k;
      return true;
    });
    return v;
  }

 private:
  // What Serve returns, before the validators of what never changes.
  Page ServeUnvalidated(uint32_t h, const std::string& path, double t) const {
    Page p;
    uint32_t n = 0, m = 0, y = 0;
    char tail = 0;
    if (path == "/robots.txt") return Robots(h);
    if (path == "/") return HtmlPage(h, 0, t);
    if (o_.orphans > 0) {
      std::optional<Page> sitemap = SitemapPage(h, path);
      if (sitemap) return *sitemap;
    }
    if (o_.assets && path.rfind("/static/", 0) == 0) {
      std::optional<Page> asset = AssetPage(path.substr(0, path.find('?')));
      if (asset) return *asset;
    }
    if (std::sscanf(path.c_str(), "/p/%u.htm%c", &n, &tail) == 2 && tail == 'l' &&
        path == "/p/" + std::to_string(n) + ".html" && n < PagesOn(h)) {
      return HtmlPage(h, n, t);
    }
    if (std::sscanf(path.c_str(), "/cal/%u/%u", &y, &m) == 2 &&
        path == "/cal/" + std::to_string(y) + "/" + std::to_string(m) && m >= 1 &&
        m <= 12) {
      uint32_t ny = m == 12 ? y + 1 : y, nm = m == 12 ? 1 : m + 1;
      p.body = "<html><head><title>" + std::to_string(y) + "-" + std::to_string(m) +
               "</title></head><body><a href=\"/cal/" + std::to_string(ny) + "/" +
               std::to_string(nm) + "\">next month</a></body></html>";
      return p;
    }
    if (path == "/loop/a" || path == "/loop/b") {
      return Redirect(path == "/loop/a" ? "/loop/b" : "/loop/a");
    }
    if (std::sscanf(path.c_str(), "/r/long/%u", &n) == 1 &&
        path == "/r/long/" + std::to_string(n) && n >= 1 && n <= 8) {
      return Redirect(n == 1 ? "/p/1.html" : "/r/long/" + std::to_string(n - 1));
    }
    if (std::sscanf(path.c_str(), "/r/%u/%u", &n, &m) == 2 &&
        path == "/r/" + std::to_string(n) + "/" + std::to_string(m) && n < 20 && m >= 1 &&
        m <= 3) {
      // Chain n: hops m, m-1, ..., 1, then a real page (absolute URL for m=1).
      if (m > 1) return Redirect("/r/" + std::to_string(n) + "/" + std::to_string(m - 1));
      return Redirect(Origin(h) + "/p/" + std::to_string((n * 7 + 1) % PagesOn(h)) +
                      ".html");
    }
    if (std::sscanf(path.c_str(), "/private/%u.html", &n) == 1 && n < 50) {
      p.body = "<html><body>private " + std::to_string(n) + "</body></html>";
      return p;
    }
    if (std::sscanf(path.c_str(), "/files/%u.tx%c", &n, &tail) == 2 && tail == 't' &&
        n < 20) {
      p.content_type = "text/plain";
      p.body = "plain text file " + std::to_string(n) + " <a href=\"/not-a-link\">\n";
      p.gzip_ok = true;
      return p;
    }
    if (std::sscanf(path.c_str(), "/files/%u.pd%c", &n, &tail) == 2 && tail == 'f' &&
        n < 20) {
      p.content_type = "application/pdf";
      p.body = "%PDF-1.4\n% not really a pdf " + std::to_string(n) + "\n";
      return p;
    }
    if (path == "/slow") {
      p.slow = true;
      p.body = "<html><body>slow</body></html>";
      return p;
    }
    if (path == "/huge") {
      p.huge = true;
      p.content_type = "text/plain";
      return p;
    }
    if (path == "/bad") {
      p.malformed = true;
      return p;
    }
    if (path == "/status/500") {
      p.status = 500;
      p.body = "<html><body>server error</body></html>";
      return p;
    }
    p.status = 404;
    p.body = "<html><body>not found</body></html>";
    return p;
  }

 public:
  // The normalized URLs a correct crawl (seeds: every host's "/", scope: the
  // seeds' hosts) fetches: a breadth-first walk over what Serve returns,
  // with robots.txt, max_depth and max_redirects applied as the crawler does.
  std::set<std::string> Truth() const {
    std::set<std::string> fetched, seen;
    struct Item {
      std::string url;
      uint32_t depth, redirects;
    };
    std::deque<Item> queue;
    for (uint32_t h = 0; h < o_.hosts; ++h) {
      fetched.insert(Origin(h) + "/robots.txt");
      seen.insert(Origin(h) + "/");
      queue.push_back({Origin(h) + "/", 0, 0});
    }
    // Sitemaps (crawl.sitemaps = "robots"): what hosts 0 and 2 name, down to
    // sitemap_max_depth = 2; their orphan pages at depth 1.
    if (o_.orphans > 0) {
      for (uint32_t h = 0; h < o_.hosts; ++h) {
        if (RobotsKind(h) != 0 && RobotsKind(h) != 2) continue;
        for (const char* path :
             {"/sitemap-index.xml", "/sitemaps/a.xml", "/sitemaps/b.xml.gz",
              "/sitemaps/evil.xml", "/sitemaps/nested.xml", "/sitemaps/nested2.xml"}) {
          fetched.insert(Origin(h) + path);
        }
        for (uint32_t i = 0; i < o_.orphans; ++i) {
          std::string url = Origin(h) + "/orphan/" + std::to_string(i) + ".html";
          if (seen.insert(url).second && o_.max_depth >= 1) queue.push_back({url, 1, 0});
        }
      }
    }
    while (!queue.empty()) {
      Item it = queue.front();
      queue.pop_front();
      uint32_t h = 0;
      std::string path;
      if (!Split(it.url, &h, &path) || !Allowed(h, path)) continue;
      fetched.insert(it.url);
      Page p = Serve(h, path.substr(0, path.find('?')));
      auto offer = [&](const std::string& url, uint32_t depth, uint32_t redirects) {
        if (depth > o_.max_depth || !seen.insert(url).second) return;
        queue.push_back({url, depth, redirects});
      };
      if (p.status / 100 == 3) {
        if (it.redirects < o_.max_redirects) {
          std::string target = p.location[0] == '/' ? Origin(h) + p.location : p.location;
          offer(target, it.depth, it.redirects + 1);
        }
      } else if (p.status == 200 && p.content_type == "text/html" && !p.slow) {
        for (const std::string& l : NormalizedLinks(h, path)) offer(l, it.depth + 1, 0);
      } else if (p.status == 200 && p.content_type == "text/css") {
        for (const std::string& l : CssLinks(h, path)) offer(l, it.depth + 1, 0);
      }
    }
    return fetched;
  }

  // The links of a page as the crawler must see them after normalization.
  std::vector<std::string> NormalizedLinks(uint32_t h, const std::string& path) const {
    std::vector<std::string> out;
    if (path.rfind("/cal/", 0) == 0) {
      uint32_t y = 0, m = 0;
      std::sscanf(path.c_str(), "/cal/%u/%u", &y, &m);
      out.push_back(Origin(h) + "/cal/" + std::to_string(m == 12 ? y + 1 : y) + "/" +
                    std::to_string(m == 12 ? 1 : m + 1));
      return out;
    }
    uint32_t i = 0;
    if (path != "/" && std::sscanf(path.c_str(), "/p/%u", &i) != 1)
      return out;  // leaf pages
    if (o_.assets) {
      for (const std::string& a : PageAssets(i)) out.push_back(AssetOrigin(h) + a);
    }
    for (const Link& l : Links(h, i)) out.push_back(l.normalized);
    return out;
  }

  // The URLs a stylesheet of the assets loads, normalized.
  std::vector<std::string> CssLinks(uint32_t h, const std::string& target) const {
    std::vector<std::string> out;
    const std::string path = target.substr(0, target.find('?'));
    if (path == "/static/site.css") {
      for (const char* p :
           {"/static/theme/base.css", "/static/theme/print.css", "/static/img/bg.png"})
        out.push_back(Origin(h) + p);
    } else if (path == "/static/theme/base.css") {
      for (const char* p :
           {"/static/fonts/body.woff2", "/static/fonts/body.woff", "/static/img/h1.png"})
        out.push_back(Origin(h) + p);
    }
    return out;
  }

 private:
  struct Link {
    std::string href;        // as written in the page
    std::string normalized;  // what the crawler must make of it
  };

  using Rng = SplitMix64;  // rng.h
  static double Unit(Rng& rng) { return rng.Unit(); }
  // Calls visit(k, time of change k) for k = 1, 2, ... while it returns true
  // (never, for a page that does not change).
  template <typename Visit>
  void ForEachChange(uint32_t h, uint32_t i, Visit visit) const {
    const double rate = ChangeRate(h, i);
    if (rate <= 0) return;
    Rng rng{RngFor(h, i).s ^ 0xc2b2ae3d27d4eb4fULL};
    double at = 0;
    for (uint64_t k = 1;; ++k) {
      at += -std::log(1 - Unit(rng)) / rate;
      if (!visit(k, at)) return;
    }
  }

  Rng RngFor(uint32_t h, uint32_t i) const {
    return Rng{o_.seed * 0x100000001b3ULL ^ (uint64_t{h} << 40) ^ i};
  }

  // Where host h's pages load their requisites from.
  std::string AssetOrigin(uint32_t h) const {
    return o_.assets_host >= 0 ? Origin(static_cast<uint32_t>(o_.assets_host))
                               : Origin(h);
  }

  // A page's requisites, in document order (paths).
  std::vector<std::string> PageAssets(uint32_t i) const {
    const std::string n = std::to_string(i % 8);
    std::vector<std::string> a = {"/static/site.css", "/static/img/" + n + ".png",
                                  "/static/img/" + n + "-2x.png", "/static/favicon.ico",
                                  "/static/img/logo.svg"};
    if (o_.asset_query)
      for (std::string& s : a) s += "?v=" + std::to_string(i);
    return a;
  }

  // `body` padded to asset_bytes, as its content type allows, the padding
  // drawn from its path (so no two assets are the same).
  void Pad(const std::string& path, Page* p) const {
    if (p->body.size() >= o_.asset_bytes) return;
    Rng rng{std::hash<std::string>()(path)};
    const bool svg = p->content_type == "image/svg+xml";
    const bool text = svg || p->content_type == "text/css";
    if (text) p->body += svg ? "<!-- " : "/* ";
    while (p->body.size() + 4 < o_.asset_bytes) {
      const uint64_t v = rng.Next();
      if (text) {
        p->body += kAssetWords[v % (sizeof(kAssetWords) / sizeof(kAssetWords[0]))];
        p->body += ' ';
      } else {
        p->body.append(reinterpret_cast<const char*>(&v), sizeof(v));
      }
    }
    if (text) p->body += svg ? "-->\n" : "*/\n";
  }
  static constexpr const char* kAssetWords[] = {"grid",  "flex",   "margin", "padding",
                                                "color", "border", "font",   "inline",
                                                "block", "shadow", "radius", "none"};

  // What /static/ serves (nullopt: nothing there), padded to asset_bytes.
  std::optional<Page> AssetPage(const std::string& path) const {
    std::optional<Page> p = UnpaddedAsset(path);
    if (p && o_.asset_bytes > 0) Pad(path, &*p);
    return p;
  }
  static std::optional<Page> UnpaddedAsset(const std::string& path) {
    Page p;
    p.content_type = "text/css";
    if (path == "/static/site.css") {
      p.body =
          "@import \"theme/base.css\";\n@import url('theme/print.css') print;\n"
          "body { background: #fff url(img/bg.png) repeat-x; }\n";
      p.gzip_ok = true;
      return p;
    }
    if (path == "/static/theme/base.css") {
      p.body =
          "@font-face { font-family: body; src: url(../fonts/body.woff2) "
          "format(\"woff2\"),\n  url(\"../fonts/body.woff\") format(\"woff\"); }\n"
          "h1 { background-image: image-set(\"../img/h1.png\" 1x); content: \"h1.png\"; "
          "}\n";
      return p;
    }
    if (path == "/static/theme/print.css") {
      p.body = "/* a { background: url(../img/not-this.png) } */\na { color: black; }\n";
      return p;
    }
    unsigned n = 0;
    char tail = 0;
    if (path == "/static/img/bg.png" || path == "/static/img/h1.png" ||
        (std::sscanf(path.c_str(), "/static/img/%u.pn%c", &n, &tail) == 2 && n < 8 &&
         path == "/static/img/" + std::to_string(n) + ".png") ||
        (std::sscanf(path.c_str(), "/static/img/%u-2x.pn%c", &n, &tail) == 2 && n < 8 &&
         path == "/static/img/" + std::to_string(n) + "-2x.png")) {
      p.content_type = "image/png";
      p.body = OnePixelPng();
      return p;
    }
    if (path == "/static/img/logo.svg") {  // shown only with its type (never sniffed)
      p.content_type = "image/svg+xml";
      p.body =
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"8\" height=\"8\">"
          "<rect width=\"8\" height=\"8\" fill=\"#36c\"/></svg>\n";
      return p;
    }
    if (path == "/static/favicon.ico") {
      p.content_type = "image/png";  // browsers take a PNG favicon
      p.body = OnePixelPng();
      return p;
    }
    if (path == "/static/fonts/body.woff2" || path == "/static/fonts/body.woff") {
      p.content_type = path.ends_with("2") ? "font/woff2" : "font/woff";
      p.body = "not really a font: " + path;
      return p;
    }
    return std::nullopt;
  }

  static std::string PagePath(uint32_t i) {
    return i == 0 ? "/" : "/p/" + std::to_string(i) + ".html";
  }

  std::vector<Link> Links(uint32_t h, uint32_t i) const {
    Rng rng = RngFor(h, i);
    std::vector<Link> links;
    if (o_.sparse) {
      uint32_t h2 = (h + 1) % o_.hosts;
      if (i + 1 < PagesOn(h2)) {
        std::string url = Origin(h2) + PagePath(i + 1);
        links.push_back({url, url});
      }
      return links;
    }
    if (i == 0) {
      for (const char* special : {"/cal/2000/1", "/loop/a", "/r/long/8", "/slow", "/huge",
                                  "/bad", "/status/500"}) {
        links.push_back({special, Origin(h) + special});
      }
    }
    uint32_t count = 20 + rng.Below(81);
    for (uint32_t k = 0; k < count; ++k) {
      uint32_t kind = rng.Below(100);
      if (kind < 70) {  // in-site page, in one of several spellings
        uint32_t j = rng.Below(PagesOn(h));
        std::string path = PagePath(j);
        std::string href;
        switch (rng.Below(5)) {
          case 0:
            href = path;
            break;
          case 1:
            href = Origin(h) + path;
            break;
          case 2:
            href = "HTTP://" + Authority(h) + path;
            break;
          case 3:
            href = j == 0 ? "/" : std::to_string(j) + ".html";
            break;  // relative to /p/
          default:
            href = path + "#section-" + std::to_string(rng.Below(9));
            break;
        }
        if (i == 0 && href.find("://") == std::string::npos && href[0] != '/')
          href = "/p/" + href;
        links.push_back({href, Origin(h) + path});
      } else if (kind < 85) {  // another host
        uint32_t h2 = rng.Below(o_.hosts);
        std::string url = Origin(h2) + PagePath(rng.Below(PagesOn(h2)));
        links.push_back({url, url});
      } else if (kind < 90) {
        std::string path = "/missing/" + std::to_string(rng.Below(50)) + ".html";
        links.push_back({path, Origin(h) + path});
      } else if (kind < 93) {
        std::string path = "/private/" + std::to_string(rng.Below(50)) + ".html";
        links.push_back({path, Origin(h) + path});
      } else if (kind < 96) {
        std::string path =
            "/files/" + std::to_string(rng.Below(20)) + (rng.Below(2) ? ".txt" : ".pdf");
        links.push_back({path, Origin(h) + path});
      } else {
        std::string path = "/r/" + std::to_string(rng.Below(20)) + "/" +
                           std::to_string(1 + rng.Below(3));
        links.push_back({path, Origin(h) + path});
      }
    }
    return links;
  }

  Page HtmlPage(uint32_t h, uint32_t i, double t = 0) const {
    static const char* const kWords[] = {
        "crawler", "frontier", "bloom",  "filter", "politeness", "archive",   "record",
        "host",    "the",      "of",     "and",    "a",          "page",      "link",
        "web",     "index",    "robots", "delay",  "queue",      "depth",     "seed",
        "fetch",   "response", "header", "body",   "digest",     "checkpoint"};
    Rng rng = RngFor(h, i);
    rng.Next();  // not the link stream's first value
    const uint64_t version = Version(h, i, t);
    Rng text{rng.Next() ^ (version * 0x9e3779b97f4a7c15ULL)};
    size_t target = o_.page_bytes > 0 ? o_.page_bytes / 2 + text.Below(o_.page_bytes)
                                      : 5000 + text.Below(55000);
    Page p;
    p.gzip_ok = i % 3 == 0;
    p.etag = "\"" + std::to_string(h) + "-" + std::to_string(i) + "-" +
             std::to_string(version) + "\"";
    p.modified_s = ChangeTime(h, i, version);
    std::string& b = p.body;
    b.reserve(target + 8192);
    b = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>host " +
        std::to_string(h) + " page " + std::to_string(i) + "</title>";
    if (o_.assets) {
      const std::vector<std::string> a = PageAssets(i);
      const std::string o = o_.assets_host >= 0 ? AssetOrigin(h) : "";
      b += "<link rel=\"stylesheet\" href=\"" + o + a[0] +
           "\"><link rel=\"icon\" href=\"" + o + a[3] + "\"></head><body>\n<img src=\"" +
           o + a[1] + "\" srcset=\"" + o + a[2] + " 2x\" alt=\"\"><img src=\"" + o +
           a[4] + "\" alt=\"\">";
    } else {
      b += "</head><body>\n";
    }
    b += "<h1>Page " + std::to_string(i) + "</h1>\n";
    if (o_.change_mean_s > 0) b += "<p class=\"version\">" + p.etag + "</p>\n";
    std::vector<Link> links = Links(h, i);
    size_t per_link = target / (links.size() + 1);
    for (const Link& l : links) {
      b += "<p>";
      size_t stop = b.size() + per_link;
      while (b.size() < stop) {
        b += kWords[text.Below(sizeof(kWords) / sizeof(kWords[0]))];
        b += ' ';
      }
      b += "<a href=\"" + l.href + "\">link</a></p>\n";
    }
    b += "</body></html>\n";
    return p;
  }

  // The sitemap files (see the top of this file); nullopt: not one.
  std::optional<Page> SitemapPage(uint32_t h, const std::string& path) const {
    Page p;
    p.content_type = "application/xml";
    const std::string o = Origin(h);
    auto urlset = [&](const std::vector<std::string>& locs) {
      std::string b =
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n";
      for (const std::string& l : locs)
        b += "  <url><loc>" + l + "</loc><lastmod>2024-01-01</lastmod></url>\n";
      return b + "</urlset>\n";
    };
    auto index = [&](const std::vector<std::string>& locs) {
      std::string b =
          "<?xml version=\"1.0\"?>\n"
          "<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n";
      for (const std::string& l : locs)
        b += "  <sitemap><loc>" + l + "</loc></sitemap>\n";
      return b + "</sitemapindex>\n";
    };
    auto orphans = [&](int parity) {
      std::vector<std::string> out;
      for (uint32_t i = 0; i < o_.orphans; ++i)
        if (parity < 0 || static_cast<int>(i % 2) == parity)
          out.push_back(o + "/orphan/" + std::to_string(i) + ".html");
      return out;
    };
    uint32_t n = 0;
    char tail = 0;
    if (path == "/sitemap-index.xml") {
      p.body =
          index({o + "/sitemaps/a.xml", "/sitemaps/b.xml.gz", o + "/sitemaps/evil.xml",
                 o + "/sitemaps/nested.xml", o + "/sitemap-index.xml"});
    } else if (path == "/sitemaps/a.xml") {
      std::vector<std::string> locs = orphans(0);
      locs.push_back(o + "/");
      p.body = urlset(locs);
    } else if (path == "/sitemaps/b.xml.gz") {
      p.content_type = "application/gzip";
      p.body = testing::Gzip(urlset(orphans(1)));
    } else if (path == "/sitemaps/evil.xml") {
      p.body =
          "<?xml version=\"1.0\"?>\n<!DOCTYPE urlset [\n"
          "<!ENTITY xxe SYSTEM \"file:///etc/passwd\">\n<!ENTITY l0 \"lol\">\n"
          "<!ENTITY l1 \"&l0;&l0;&l0;&l0;&l0;&l0;&l0;&l0;&l0;&l0;\">\n"
          "<!ENTITY l2 \"&l1;&l1;&l1;&l1;&l1;&l1;&l1;&l1;&l1;&l1;\">\n]>\n"
          "<urlset><url><loc>" +
          o + "/evil/&xxe;</loc></url><url><loc>" + o +
          "/evil/&l2;</loc></url></urlset>\n";
    } else if (path == "/sitemaps/nested.xml") {
      p.body = index({o + "/sitemaps/nested2.xml"});
    } else if (path == "/sitemaps/nested2.xml") {
      p.body = index({o + "/sitemaps/deep.xml"});
    } else if (path == "/sitemaps/deep.xml") {
      p.body = urlset({o + "/orphan/deep.html"});
    } else if (path == "/sitemap.xml") {
      p.body = urlset(orphans(-1));
    } else if (path == "/orphan/deep.html" ||
               (std::sscanf(path.c_str(), "/orphan/%u.htm%c", &n, &tail) == 2 &&
                tail == 'l' && path == "/orphan/" + std::to_string(n) + ".html" &&
                n < o_.orphans)) {
      p.body =
          "<html><head><title>orphan</title></head><body>only in a sitemap</body></html>";
    } else {
      return std::nullopt;
    }
    return p;
  }

  Page Robots(uint32_t h) const {
    Page p;
    p.content_type = "text/plain";
    std::string sitemap =
        o_.orphans > 0 ? "Sitemap: " + Origin(h) + "/sitemap-index.xml\n" : "";
    switch (RobotsKind(h)) {
      case 0:
        p.body = "User-agent: *\nDisallow: /private/\n" + sitemap;
        if (o_.crawl_delay_s > 0)
          p.body += "Crawl-delay: " + std::to_string(o_.crawl_delay_s) + "\n";
        break;
      case 1:
        p.status = 404;
        p.body = "no robots here";
        break;
      case 2:
        p.body = "# a comment\nUser-agent: *\nDisallow: /private/\n" + sitemap;
        break;
      default:
        p.status = 500;
        p.body = "robots broken";
        break;
    }
    return p;
  }

  Page Redirect(const std::string& location) const {
    Page p;
    p.status = 302;
    p.location = location;
    p.body = "<html><body>moved</body></html>";
    return p;
  }

  bool Allowed(uint32_t h, const std::string& path) const {
    switch (RobotsKind(h)) {
      case 1:
        return true;
      case 3:
        return false;
      default:
        return path.rfind("/private/", 0) != 0;
    }
  }

  bool Split(const std::string& url, uint32_t* h, std::string* path) const {
    const std::string prefix = "http://";
    if (url.rfind(prefix, 0) != 0) return false;
    size_t slash = url.find('/', prefix.size());
    std::string authority = url.substr(prefix.size(), slash - prefix.size());
    if (virtual_hosts()) {
      if (!HostOf(authority, h)) return false;
    } else {
      const std::string ip = "127.0.0.1:";
      if (authority.rfind(ip, 0) != 0) return false;
      uint32_t port = static_cast<uint32_t>(std::stoul(authority.substr(ip.size())));
      if (port < o_.port || port >= o_.port + o_.hosts) return false;
      *h = port - o_.port;
    }
    *path = slash == std::string::npos ? "/" : url.substr(slash);
    return true;
  }

  SiteOptions o_;
};

}  // namespace crawler::testsite

#endif  // TESTS_TESTSITE_SITE_H_
