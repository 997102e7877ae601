// The worker's sitemap steps (see worker.h): offering a host's sitemaps
// once its robots.txt is read, and reading a fetched one.
#include <spdlog/spdlog.h>

#include "engine/worker.h"
#include "parsers/sitemap.h"

namespace crawler::engine {

Status Worker::OfferSitemaps(const Gate::Pass& pass, const std::string& host,
                             const std::vector<std::string>& named) {
  const std::string& mode = p_.config.crawl.sitemaps;
  if (mode == "off") return Status::Ok();
  std::vector<std::string> urls = named;
  if (mode == "robots+default") urls.push_back(host + "/sitemap.xml");
  const std::string robots = host + "/robots.txt";
  std::vector<frontier::UrlEntry> mine, theirs;
  uint64_t out_of_scope = 0;
  for (const std::string& u : urls) {
    parsers::UrlResult url = parsers::ResolveHref(robots, u, p_.config.url);
    if (!url.ok()) {
      spdlog::warn("{}: Sitemap: {}: {}", robots, u, url.status().message());
      continue;
    }
    if (!p_.scope.Allows(*url)) {  // a sitemap on another host obeys scope
      ++out_of_scope;
      continue;
    }
    frontier::UrlEntry e{*url, 0, robots, 0};
    e.kind = frontier::UrlEntry::Kind::kSitemap;
    (p_.placement != nullptr && !p_.placement->Owns(*url) ? theirs : mine)
        .push_back(std::move(e));
  }
  p_.counters.Add(&CrawlSummary::out_of_scope, out_of_scope);
  if (!theirs.empty()) p_.placement->Ship(theirs);
  return Admit(pass, std::move(mine));
}

// A fetched sitemap (plain or gzip) -> its <loc>s resolved against `url`.
Worker::Prepared::SitemapUrls Worker::ReadSitemap(const FetchResult& r,
                                                  const std::string& url) const {
  Prepared::SitemapUrls out;
  std::string plain;
  std::string_view body = r.body;
  if (parsers::IsGzip(body)) {  // .xml.gz (a Content-Encoding is undone by libcurl)
    std::string error;
    bool cut = false;
    plain = parsers::GunzipSitemap(body, &error, &cut);
    if (!error.empty()) out.problems.push_back(error);
    if (cut) out.problems.push_back("over 50 MB uncompressed: the rest is ignored");
    body = plain;
  }
  if (r.truncated) out.problems.push_back("body cut at fetch.max_body_bytes");
  parsers::Sitemap map = parsers::ParseSitemap(body);
  out.index = map.index;
  for (std::string& w : map.warnings) out.problems.push_back(std::move(w));
  for (const parsers::SitemapEntry& e : map.entries) {
    parsers::UrlResult u = parsers::ResolveHref(url, e.loc, p_.config.url);
    if (u.ok()) {
      out.urls.push_back(*u);
    } else if (out.problems.size() < 20) {
      out.problems.push_back("<loc>" + e.loc.substr(0, 200) +
                             "</loc>: " + u.status().message());
    }
  }
  return out;
}

}  // namespace crawler::engine
