// parsers_bench: URL normalization throughput, and link-extraction cost
// against gumbo's own parse of the same pages.
//
//   build/tests/parsers_bench                # 1000 pages of 10-60 KB
//   build/tests/parsers_bench --pages 3000
//   build/tests/parsers_bench --dir SITE_DIR   # gumbo alone (default options and
//                                              # max_errors = 0) and ExtractLinks
//                                              # over a site's files
//   build/tests/parsers_bench --css-dir DIR    # CssUrls and ExtractCssLinks over
//                                              # the .css files under DIR (the
//                                              # default run times synthetic ones)
//
// Sample (this 2-core machine, Release):
//
//   parsers_bench: 1000 pages, 35.1 MB (avg 35.1 KB), 58122 hrefs (avg 49.4 bytes raw)
//   normalize (UrlResolver::Resolve): 1.50 M URLs/s single-threaded; 56643 ok, avg 67.8
//   bytes out gumbo alone:       23.2 MB/s      660 pages/s ExtractLinks:      22.4 MB/s
//   638 pages/s  (56643 links) extraction / gumbo time: 1.035 (target <= 1.3)
//
// The corpus is generated (deterministic) before any timing: pages of
// 10-60 KB of text and markup with 20-100 links each, relative (same dir,
// "../", root-relative, query strings, fragments) and absolute (other hosts,
// mixed-case hosts, default ports), plus a few mailto:/javascript: links.
// Normalization is timed on every href of the corpus through
// UrlResolver::Resolve (resolve against the page + normalize), one resolver
// per page as ExtractLinks uses it, single-threaded. Extraction is
// timed as ExtractLinks over every page vs gumbo_parse + destroy alone.
// Prints numbers; asserts nothing.
#include <gumbo.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "parsers/css.h"
#include "parsers/links.h"
#include "parsers/url.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Page {
  std::string url;
  std::string html;
  std::vector<std::string> hrefs;
};

std::string Href(std::mt19937_64& rng, int page) {
  auto n = [&rng](uint64_t m) { return std::to_string(rng() % m); };
  switch (rng() % 10) {
    case 0:
      return "articles/2024/" + n(12) + "/the-long-title-of-article-number-" + n(100000) +
             ".html";
    case 1:
      return "../section-" + n(50) + "/category/subcategory-" + n(30) + "/item-" +
             n(1000) + ".html";
    case 2:
      return "/docs/reference/" + n(500) + "/index.html?lang=en&ref=page-" +
             std::to_string(page);
    case 3:
      return "https://Host" + n(300) + ".Example.org:443/a/b/c/resource/" + n(9999) +
             "?view=full";
    case 4:
      return "http://www.example.com/search?q=term" + n(1000) +
             "&page=2&sort=date#results";
    case 5:
      return "./topic/" + n(800) + "/discussion/thread-" + n(99999) + "/#comment-" + n(9);
    case 6:
      return "//cdn.example.net/assets/v" + n(20) + "/downloads/files/document-" +
             n(500) + ".html";
    case 7:
      return "/a/./b/../c/%7Euser/projects/page%20" + n(300) +
             ".html?session=abc&x=" + n(99);
    case 8:
      return rng() % 4 == 0 ? "mailto:someone@example.org"
                            : "/shop/item.html?id=" + n(100000) + "&color=blue&size=xl";
    default:
      return "#top";
  }
}

std::vector<Page> MakeCorpus(int pages) {
  std::mt19937_64 rng(42);
  static const char* kWords[] = {"crawler", "archive",    "index",   "page",  "link",
                                 "the",     "of",         "web",     "bloom", "filter",
                                 "resume",  "politeness", "frontier"};
  std::vector<Page> corpus;
  for (int p = 0; p < pages; ++p) {
    Page page;
    page.url = "https://site" + std::to_string(p % 20) + ".example.org/dir" +
               std::to_string(p % 37) + "/page-" + std::to_string(p) + ".html";
    size_t target = 10'000 + rng() % 50'000;
    int links = 20 + static_cast<int>(rng() % 81);
    std::string& h = page.html;
    h = "<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>Page " +
        std::to_string(p) +
        "</title><link rel=stylesheet href=/s.css></head><body><nav><ul>";
    for (int l = 0; l < links; ++l) {
      page.hrefs.push_back(Href(rng, p));
      if (l == links / 2) h += "</ul></nav><main>";
      h += l < links / 2 ? "<li><a href=\"" : "<p>See <a class=ref href=\"";
      h += page.hrefs.back();
      h += "\">link ";
      h += std::to_string(l);
      h += l < links / 2 ? "</a></li>" : "</a> for more.</p>";
    }
    while (h.size() < target) {
      h += "<p>";
      for (int w = 0; w < 60; ++w) {
        h += kWords[rng() % (sizeof(kWords) / sizeof(kWords[0]))];
        h += ' ';
      }
      h += "</p>\n";
    }
    h += "</main></body></html>";
    corpus.push_back(std::move(page));
  }
  return corpus;
}

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// Stylesheets as sites write them: rules of 3-8 declarations, a url() in
// about one rule of 8 (backgrounds, fonts, quoted and not), comments and
// strings that are no URL, an @import at the top.
std::vector<std::string> MakeCss(int sheets) {
  std::mt19937_64 rng(7);
  std::vector<std::string> out;
  for (int s = 0; s < sheets; ++s) {
    std::string css = "@charset \"utf-8\";\n@import url(\"theme/base-" +
                      std::to_string(s) + ".css\") screen;\n";
    size_t target = 10000 + rng() % 60000;
    for (int r = 0; css.size() < target; ++r) {
      css += ".block-" + std::to_string(r) + " > .item:hover, #id-" +
             std::to_string(rng() % 999) + " {\n";
      for (uint64_t d = 3 + rng() % 6; d > 0; --d)
        css += "  margin: " + std::to_string(rng() % 40) + "px auto; color: #" +
               std::to_string(100000 + rng() % 899999) + ";\n";
      switch (rng() % 16) {
        case 0:
          css += "  background: url(../img/bg-" + std::to_string(rng() % 300) +
                 ".png) no-repeat;\n";
          break;
        case 1:
          css += "  background-image: url(\"/static/icons/" +
                 std::to_string(rng() % 300) + ".svg\");\n";
          break;
        case 2:
          css += "  /* an old url(../img/old.png) */ content: \"\\201C\";\n";
          break;
        default:
          break;
      }
      css += "}\n";
      if (r % 97 == 0)
        css += "@font-face { font-family: f" + std::to_string(r) + "; src: url(fonts/f" +
               std::to_string(r) + ".woff2) format(\"woff2\"); }\n";
    }
    out.push_back(std::move(css));
  }
  return out;
}

// CssUrls alone and ExtractCssLinks (resolve + normalize too), best of rounds.
void CssTimes(const std::vector<std::string>& sheets, const std::string& what,
              int rounds) {
  size_t bytes = 0;
  for (const std::string& c : sheets) bytes += c.size();
  double tokenize = 1e300, extract = 1e300;
  size_t urls = 0, links = 0;
  for (int r = 0; r < rounds; ++r) {
    urls = links = 0;
    auto start = Clock::now();
    for (const std::string& c : sheets) urls += crawler::parsers::CssUrls(c).size();
    tokenize = std::min(tokenize, Seconds(start));
    start = Clock::now();
    for (const std::string& c : sheets)
      links +=
          crawler::parsers::ExtractCssLinks(c, "http://127.0.0.1/static/css/site.css")
              .links.size();
    extract = std::min(extract, Seconds(start));
  }
  const double mb = static_cast<double>(bytes) / 1e6;
  std::printf(
      "CSS (%s): %zu sheets, %.1f MB; CssUrls %.1f MB/s (%zu URLs); ExtractCssLinks "
      "%.1f MB/s (%zu links)\n",
      what.c_str(), sheets.size(), mb, mb / tokenize, urls, mb / extract, links);
}

}  // namespace

// --dir: gumbo alone over the .html files under DIR, one thread (the
// crawl benchmark's parsing ceiling). Files are read into memory first.
int GumboOverDir(const std::string& dir, size_t limit, int rounds) {
  std::vector<std::string> pages;
  size_t bytes = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (pages.size() >= limit) break;
    if (!e.is_regular_file() || e.path().extension() != ".html") continue;
    std::ifstream in(e.path(), std::ios::binary);
    pages.emplace_back(std::istreambuf_iterator<char>(in),
                       std::istreambuf_iterator<char>());
    bytes += pages.back().size();
  }
  if (pages.empty()) {
    std::fprintf(stderr, "parsers_bench: no .html files under %s\n", dir.c_str());
    return 2;
  }
  // gumbo's default options record every parse error (an allocation and a
  // copy of the open-element stack each); max_errors = 0 records none, as
  // ExtractLinks parses.
  GumboOptions no_errors = kGumboDefaultOptions;
  no_errors.max_errors = 0;
  size_t errors = 0;
  auto parse_all = [&](const GumboOptions& o, bool count) {
    auto start = Clock::now();
    for (const std::string& html : pages) {
      GumboOutput* out = gumbo_parse_with_options(&o, html.data(), html.size());
      if (count) errors += out->errors.length;
      gumbo_destroy_output(&o, out);
    }
    return Seconds(start);
  };
  double best = 1e300, best_quiet = 1e300, best_extract = 1e300;
  for (int r = 0; r < rounds; ++r) {
    errors = 0;
    best = std::min(best, parse_all(kGumboDefaultOptions, true));
    best_quiet = std::min(best_quiet, parse_all(no_errors, false));
    auto start = Clock::now();
    for (const std::string& html : pages)
      crawler::parsers::ExtractLinks(html, "http://127.0.0.1/p/0.html", "utf-8");
    best_extract = std::min(best_extract, Seconds(start));
  }
  const double mb = static_cast<double>(bytes) / 1e6;
  const double n = static_cast<double>(pages.size());
  std::printf(
      "gumbo over %s: %zu pages, %.1f MB (avg %.1f KB), %.1f parse errors per page "
      "(1 thread, best of %d)\n",
      dir.c_str(), pages.size(), mb, mb * 1e3 / n, static_cast<double>(errors) / n,
      rounds);
  std::printf("gumbo alone (default options): %7.1f MB/s %7.0f pages/s %.3f ms/page\n",
              mb / best, n / best, best * 1e3 / n);
  std::printf("gumbo alone (max_errors = 0):  %7.1f MB/s %7.0f pages/s %.3f ms/page\n",
              mb / best_quiet, n / best_quiet, best_quiet * 1e3 / n);
  std::printf(
      "ExtractLinks (max_errors = 0, arena): %7.1f MB/s %7.0f pages/s %.3f ms/page\n",
      mb / best_extract, n / best_extract, best_extract * 1e3 / n);
  return 0;
}

int main(int argc, char** argv) {
  int pages = 1000;
  int rounds = 3;
  std::string dir;
  size_t limit = SIZE_MAX;
  CLI::App app{"parsers_bench: URL normalization and link extraction speed"};
  app.add_option("--pages", pages, "synthetic pages")->capture_default_str();
  app.add_option("--rounds", rounds, "rounds (best is printed)")->capture_default_str();
  app.add_option("--dir", dir,
                 "parse the .html files of DIR instead (gumbo alone vs extraction)");
  app.add_option("--limit", limit, "at most this many files of --dir");
  std::string css_dir;
  app.add_option("--css-dir", css_dir, "time CSS extraction over the .css files of DIR");
  CLI11_PARSE(app, argc, argv);
  if (!dir.empty()) return GumboOverDir(dir, limit, rounds);
  if (!css_dir.empty()) {
    std::vector<std::string> sheets;
    for (const auto& e : std::filesystem::recursive_directory_iterator(css_dir)) {
      if (!e.is_regular_file() || e.path().extension() != ".css") continue;
      std::ifstream in(e.path(), std::ios::binary);
      sheets.emplace_back(std::istreambuf_iterator<char>(in),
                          std::istreambuf_iterator<char>());
    }
    if (sheets.empty()) {
      std::fprintf(stderr, "parsers_bench: no .css files under %s\n", css_dir.c_str());
      return 2;
    }
    CssTimes(sheets, css_dir, rounds);
    return 0;
  }
  std::vector<Page> corpus = MakeCorpus(pages);
  size_t bytes = 0, hrefs = 0, href_bytes = 0;
  for (const Page& p : corpus) {
    bytes += p.html.size();
    hrefs += p.hrefs.size();
    for (const std::string& h : p.hrefs) href_bytes += h.size();
  }
  std::printf(
      "parsers_bench: %d pages, %.1f MB (avg %.1f KB), %zu hrefs (avg %.1f bytes raw)\n",
      pages, static_cast<double>(bytes) / 1e6, static_cast<double>(bytes) / pages / 1e3,
      hrefs, static_cast<double>(href_bytes) / static_cast<double>(hrefs));

  // Normalization: best of `rounds`.
  double best = 1e300;
  size_t ok = 0, out_bytes = 0;
  for (int r = 0; r < rounds; ++r) {
    ok = out_bytes = 0;
    auto start = Clock::now();
    for (const Page& p : corpus) {
      crawler::parsers::UrlResolver resolver(
          p.url);  // once per page, as the extractor does
      for (const std::string& h : p.hrefs) {
        crawler::parsers::UrlResult u = resolver.Resolve(h);
        ok += u.ok();
        out_bytes += u.ok() ? u->size() : 0;
      }
    }
    best = std::min(best, Seconds(start));
  }
  std::printf(
      "normalize (UrlResolver::Resolve): %.2f M URLs/s single-threaded; %zu ok, avg %.1f "
      "bytes out\n",
      static_cast<double>(hrefs) / best / 1e6, ok,
      static_cast<double>(out_bytes) / static_cast<double>(ok));

  double gumbo_best = 1e300, extract_best = 1e300;
  size_t links = 0;
  for (int r = 0; r < rounds; ++r) {
    auto start = Clock::now();
    for (const Page& p : corpus) {
      GumboOutput* out =
          gumbo_parse_with_options(&kGumboDefaultOptions, p.html.data(), p.html.size());
      gumbo_destroy_output(&kGumboDefaultOptions, out);
    }
    gumbo_best = std::min(gumbo_best, Seconds(start));
    start = Clock::now();
    links = 0;
    for (const Page& p : corpus) {
      links += crawler::parsers::ExtractLinks(p.html, p.url, "utf-8").links.size();
    }
    extract_best = std::min(extract_best, Seconds(start));
  }
  double mb = static_cast<double>(bytes) / 1e6;
  std::printf("gumbo alone:    %7.1f MB/s  %7.0f pages/s\n", mb / gumbo_best,
              pages / gumbo_best);
  std::printf("ExtractLinks:   %7.1f MB/s  %7.0f pages/s  (%zu links)\n",
              mb / extract_best, pages / extract_best, links);
  std::printf("extraction / gumbo time: %.3f (target <= 1.3)\n",
              extract_best / gumbo_best);
  CssTimes(MakeCss(pages / 5), "synthetic", rounds);
  return 0;
}
