// libFuzzer target: sitemap parsing (libxml2's xmlReader) and gunzip. Never
// more than 50,000 entries, never an empty <loc>, whatever the bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "parsers/sitemap.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  if (crawler::parsers::IsGzip(body)) {
    std::string error;
    bool truncated = false;
    std::string plain = crawler::parsers::GunzipSitemap(body, &error, &truncated);
    if (plain.size() > crawler::parsers::kMaxSitemapBytes) std::abort();
    body = plain;
    (void)crawler::parsers::ParseSitemap(body);
    return 0;
  }
  crawler::parsers::Sitemap s = crawler::parsers::ParseSitemap(body);
  if (s.entries.size() > crawler::parsers::kMaxSitemapUrls) std::abort();
  for (const auto& e : s.entries) {
    if (e.loc.empty()) std::abort();
  }
  return 0;
}
