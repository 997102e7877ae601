// libFuzzer target: link extraction. Every extracted URL must be a normalized
// http(s) URL (normalizing it again changes nothing).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "parsers/links.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view html(reinterpret_cast<const char*>(data), size);
  for (const char* charset : {"", "windows-1252"}) {
    crawler::parsers::ExtractResult r =
        crawler::parsers::ExtractLinks(html, "http://example.org/dir/page.html", charset);
    for (const crawler::parsers::Link& link : r.links) {
      crawler::parsers::UrlResult again = crawler::parsers::NormalizeUrl(link.url);
      if (!again.ok() || *again != link.url) std::abort();
    }
  }
  return 0;
}
