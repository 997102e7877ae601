// Sitemaps (sitemaps.org protocol 0.9): a <urlset> of pages or a
// <sitemapindex> of further sitemaps, plain or gzip-compressed.
//
// ParseSitemap reads one file with libxml2's streaming xmlReader, safely:
//   - no network access (XML_PARSE_NONET) and no DTD loaded, so an external
//     entity (XXE) is never fetched or read;
//   - entities are never substituted, so "billion laughs" expands nothing:
//     a <loc> that uses an entity is skipped with a warning;
//   - at most kMaxSitemapUrls (50,000) entries and kMaxSitemapBytes (50 MB)
//     uncompressed, as the protocol states; beyond them the rest is ignored
//     (truncated() and a warning), never an error.
// A <loc> is kept as written (whitespace trimmed); the caller resolves,
// normalizes and scopes it like a link. Entries of the wrong kind (a <url>
// inside a <sitemapindex>) are ignored with a warning. Malformed XML keeps
// the entries read before the fault, with a warning naming the line.
//
// GunzipSitemap decompresses a gzip body (".xml.gz"), stopping at
// kMaxSitemapBytes. Stateless functions; any thread.
#ifndef PARSERS_SITEMAP_H_
#define PARSERS_SITEMAP_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace crawler::parsers {

inline constexpr size_t kMaxSitemapUrls = 50'000;
inline constexpr size_t kMaxSitemapBytes = 50 * 1000 * 1000;

struct SitemapEntry {
  std::string loc;
  std::string lastmod;  // as written (W3C datetime), "" if absent
};

struct Sitemap {
  bool index = false;  // <sitemapindex>: entries are sitemaps, not pages
  std::vector<SitemapEntry> entries;
  std::vector<std::string> warnings;  // "line 12: ..."
  bool truncated = false;             // over 50,000 entries or 50 MB
  bool ok = false;                    // a <urlset> or <sitemapindex> root was found
};

Sitemap ParseSitemap(std::string_view body);

// True iff `body` starts with the gzip magic bytes.
bool IsGzip(std::string_view body);

// The decompressed body; *error set (and what was read so far returned) if
// it is not valid gzip; *truncated set if it stopped at kMaxSitemapBytes.
std::string GunzipSitemap(std::string_view body, std::string* error, bool* truncated);

}  // namespace crawler::parsers

#endif  // PARSERS_SITEMAP_H_
