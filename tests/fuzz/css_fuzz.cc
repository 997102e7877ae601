// libFuzzer target: the CSS URL tokenizer (parsers/css.h) and the stylesheet
// links made from it. Every URL found is non-empty, and all of them together
// are at most what unescaping can make of the input (each input byte is in
// one token at most; an escape of n >= 2 bytes gives at most 1.5n bytes of
// UTF-8, a backslash at the very end 3); every extracted link is a
// normalized http(s) URL (normalizing it again changes nothing).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "parsers/css.h"
#include "parsers/links.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view css(reinterpret_cast<const char*>(data), size);
  size_t total = 0;
  for (const std::string& url : crawler::parsers::CssUrls(css)) {
    if (url.empty()) std::abort();
    total += url.size();
  }
  if (total > 2 * size + 3) std::abort();
  crawler::parsers::ExtractResult r =
      crawler::parsers::ExtractCssLinks(css, "http://example.org/css/site.css");
  for (const crawler::parsers::Link& link : r.links) {
    crawler::parsers::UrlResult again = crawler::parsers::NormalizeUrl(link.url);
    if (!again.ok() || *again != link.url) std::abort();
  }
  return 0;
}
