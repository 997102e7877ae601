// Link extraction from HTML with gumbo (the HTML5 parsing algorithm, so broken
// markup is recovered the way browsers recover it).
//
// Collected, in document order:
//   a[href], area[href]; link[href] whose rel names a page (canonical,
//   alternate, next, prev); frame[src], iframe[src];
//   <meta http-equiv=refresh content="N; url=...">;
//   with ExtractOptions::include_assets, what a browser loads to show the
//   page: img[src|srcset], source[src|srcset], video[poster|src],
//   audio/track/embed[src], input[type=image][src], script[src],
//   link[href] with rel stylesheet, icon, apple-touch-icon, preload,
//   modulepreload or manifest, and the URLs of <style> elements and style
//   attributes (parsers/css.h; resolved against the document's base).
// ExtractCssLinks gives a stylesheet's URLs, resolved against its own URL.
// Honoured: the first <base href> (resolved against the page URL); rel=nofollow
// per link; <meta name=robots content=...> nofollow / noindex / none.
// Character sets: the extractor takes bytes and the Content-Type charset.
// UTF-8 (or none given and the bytes are valid UTF-8) is parsed as is;
// ISO-8859-1 / windows-1252 / US-ASCII (or invalid UTF-8 with no charset)
// are converted to UTF-8 first; any other charset is parsed as is, which keeps
// every ASCII character (and so every ASCII link) intact.
// Each link carries its raw href and its resolved, normalized URL; skipped
// hrefs are counted by reason (javascript:, mailto:, data:, other scheme,
// unparsable, too long) and never abort the extraction.
//
// Pure function: any thread. Cost is linear in the input (one gumbo parse and
// one iterative walk; no recursion, so deep nesting cannot exhaust the stack
// in our code).
#ifndef PARSERS_LINKS_H_
#define PARSERS_LINKS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "parsers/url.h"

namespace crawler::parsers {

enum class LinkSource : uint8_t {
  kAnchor,
  kArea,
  kLink,
  kFrame,
  kIframe,
  kMetaRefresh,
  kImg,
  kScript,
  kStylesheet,
  kLinkAsset,  // link rel=icon|apple-touch-icon|preload|modulepreload|manifest
  kSrcset,
  kMedia,  // video poster, audio/video/source/track/embed src
  kCss     // url(), @import: a stylesheet, <style>, style=""
};
const char* LinkSourceName(LinkSource source);
// A page requisite: what a browser loads to show the page (an image, a
// script, a stylesheet and what it loads, media, an icon), not a page.
bool IsRequisite(LinkSource source);

struct Link {
  std::string href;  // the attribute value as written
  std::string url;   // resolved against the base and normalized
  LinkSource source = LinkSource::kAnchor;
  bool nofollow = false;  // rel=nofollow on this element
};

struct SkipCounts {
  uint64_t javascript = 0;
  uint64_t mailto = 0;
  uint64_t data = 0;
  uint64_t other_scheme = 0;  // ftp:, tel:, ...
  uint64_t unparsable = 0;
  uint64_t too_long = 0;
  uint64_t total() const {
    return javascript + mailto + data + other_scheme + unparsable + too_long;
  }
};

// What a page's markup says of its scripts, for [browser] render = "auto"
// (docs/rendering.md): counted in the same walk as the links.
struct ScriptSignals {
  uint32_t scripts = 0;      // <script>s that run (no type, JavaScript, module)
  uint64_t text_chars = 0;   // visible text: non-space characters outside
                             // script, style, noscript, template and title
  bool app_root = false;     // an empty element whose id is an application
                             // root's ("root", "app", "__next", ...)
  bool noscript_js = false;  // a <noscript> whose text names JavaScript
  uint32_t lazy_media = 0;   // img, source, iframe or video with data-src,
                             // data-srcset or data-lazy-src (a script loads it)
};

struct ExtractOptions {
  bool include_assets = false;
  UrlOptions url;
};

struct ExtractResult {
  std::vector<Link> links;
  SkipCounts skipped;
  std::string base;  // the URL links were resolved against
  bool meta_nofollow = false;
  bool meta_noindex = false;
  ScriptSignals signals;
};

// `page_url` must be a normalized http(s) URL; `charset` is the Content-Type
// charset parameter ("" when absent).
ExtractResult ExtractLinks(std::string_view html, std::string_view page_url,
                           std::string_view charset, const ExtractOptions& options = {});

// The URLs a stylesheet loads (parsers/css.h), resolved against `sheet_url`
// and normalized, skips counted as for HTML; every link is a kCss.
ExtractResult ExtractCssLinks(std::string_view css, std::string_view sheet_url,
                              const ExtractOptions& options = {});

// Bytes in a single-byte charset to UTF-8 (windows-1252 mapping, a superset
// of ISO-8859-1's printable range). Exposed for tests.
std::string Windows1252ToUtf8(std::string_view bytes);

}  // namespace crawler::parsers

#endif  // PARSERS_LINKS_H_
