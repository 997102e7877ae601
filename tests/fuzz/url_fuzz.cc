// libFuzzer target: URL normalization and resolution. Checks, beyond "no
// crash": normalization is idempotent and its output is no longer than the
// limit and free of spaces, fragments and non-ASCII bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "parsers/url.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckNormalized(const crawler::parsers::UrlResult& r) {
  if (!r.ok()) return;
  Check(r.value().size() <= crawler::parsers::UrlOptions{}.max_length);
  for (char c : r.value()) {
    auto u = static_cast<unsigned char>(c);
    Check(u > 0x20 && u < 0x7F && c != '#');
  }
  crawler::parsers::UrlResult again = crawler::parsers::NormalizeUrl(r.value());
  Check(again.ok() && again.value() == r.value());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  CheckNormalized(crawler::parsers::NormalizeUrl(input));
  CheckNormalized(crawler::parsers::ResolveHref("http://a.example/b/c/d;p?q", input));
  crawler::parsers::UrlOptions lossy;
  lossy.sort_query = lossy.strip_tracking = lossy.strip_session_ids = lossy.strip_www =
      true;
  crawler::parsers::UrlResult r = crawler::parsers::NormalizeUrl(input, lossy);
  if (r.ok()) {
    crawler::parsers::UrlResult again = crawler::parsers::NormalizeUrl(r.value(), lossy);
    Check(again.ok() && again.value() == r.value());
  }
  return 0;
}
