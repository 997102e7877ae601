// Link extraction with gumbo; see parsers/links.h.
#include "parsers/links.h"

#include <gumbo.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "ascii.h"
#include "parsers/css.h"
#include "script_signals.h"

#if defined(__SANITIZE_ADDRESS__)
#define CRAWLER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)  // clang
#define CRAWLER_ASAN 1
#endif
#endif
#if defined(CRAWLER_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace crawler::parsers {
namespace {

using ascii::Lower;
using ascii::LowerAscii;

std::string_view TrimSpace(std::string_view s) {
  return crawler::ascii::Trim(s, crawler::ascii::kWhitespace);
}

// True iff the whitespace-separated token list `list` contains `token`
// (ASCII case-insensitive).
bool HasToken(std::string_view list, std::string_view token) {
  std::string l = LowerAscii(list);
  size_t i = 0;
  while (i < l.size()) {
    while (i < l.size() &&
           (l[i] == ' ' || l[i] == '\t' || l[i] == '\n' || l[i] == '\r' || l[i] == ','))
      ++i;
    size_t start = i;
    while (i < l.size() &&
           !(l[i] == ' ' || l[i] == '\t' || l[i] == '\n' || l[i] == '\r' || l[i] == ','))
      ++i;
    if (std::string_view(l).substr(start, i - start) == token) return true;
  }
  return false;
}

bool ValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    auto b = static_cast<unsigned char>(s[i]);
    size_t len = b < 0x80         ? 1
                 : (b >> 5) == 6  ? 2
                 : (b >> 4) == 14 ? 3
                 : (b >> 3) == 30 ? 4
                                  : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    }
    i += len;
  }
  return true;
}

const char* Attr(const GumboElement& e, const char* name) {
  const GumboAttribute* a = gumbo_get_attribute(&e.attributes, name);
  return a == nullptr ? nullptr : a->value;
}

// The URL in a meta refresh content ("5; url=http://x/" or "0;URL='x'").
std::string_view RefreshTarget(std::string_view content) {
  size_t semi = content.find_first_of(";,");
  if (semi == std::string_view::npos) return {};
  std::string_view rest = TrimSpace(content.substr(semi + 1));
  if (rest.size() >= 3 && Lower(rest[0]) == 'u' && Lower(rest[1]) == 'r' &&
      Lower(rest[2]) == 'l') {
    std::string_view after = TrimSpace(rest.substr(3));
    if (!after.empty() && after[0] == '=') rest = TrimSpace(after.substr(1));
  }
  if (!rest.empty() && (rest[0] == '\'' || rest[0] == '"')) {
    char q = rest[0];
    rest.remove_prefix(1);
    size_t end = rest.find(q);
    if (end != std::string_view::npos) rest = rest.substr(0, end);
  }
  return rest;
}

// A per-thread bump allocator for gumbo. A parse makes thousands of small
// allocations that all die together when the tree is dropped; with malloc they
// cost about a fifth of the parse. The arena hands out memory from large
// chunks and drops the whole tree at once (gumbo's own frees are no-ops).
// After each page it keeps up to kKeepBytes of chunks for the next one, so a
// huge page does not pin its memory. ASan builds poison a gap after each
// allocation and every free byte of a chunk, so an overflow inside the tree
// or a pointer kept past the page is still caught.
class GumboArena {
 public:
  static constexpr size_t kChunkBytes = 256 << 10;
  static constexpr size_t kKeepBytes = 4 << 20;

  ~GumboArena() {
    for (Chunk& c : chunks_) std::free(c.data);
  }

  static void* Allocate(void* self, size_t size) {
    return static_cast<GumboArena*>(self)->Take(size);
  }
  static void Free(void*, void*) {}

  GumboOptions Options() {
    GumboOptions o = kGumboDefaultOptions;
    o.allocator = &Allocate;
    o.deallocator = &Free;
    o.userdata = this;
    // Parse errors are not recorded: nothing reads them, and each one is an
    // allocation plus a copy of the open-element stack. Measured with
    // parsers_bench --dir: no difference on pages with few errors (the crawl
    // bench's pages: 0 a page; /usr/share/doc: 9.6), but a 0.9 MB page with
    // 100,000 errors under 200 open elements parsed in 102 ms instead of 290
    // (the page: python3 -c "print('<html><body>' + '<div>'*200 +
    // '<p>x</td>'*100000 + '</body></html>')" > DIR/a.html).
    o.max_errors = 0;
    return o;
  }

  // Forget every allocation (the tree must be dropped first).
  void Reset() {
    size_t kept = 0, n = 0;
    for (; n < chunks_.size() && kept + chunks_[n].size <= kKeepBytes; ++n)
      kept += chunks_[n].size;
    for (size_t i = n; i < chunks_.size(); ++i) std::free(chunks_[i].data);
    chunks_.resize(n);
    for (Chunk& c : chunks_) {
      c.used = 0;
      Poison(c.data, c.size);  // a pointer kept past the page is caught
    }
    current_ = 0;
  }

 private:
  struct Chunk {
    char* data;
    size_t size;
    size_t used;
  };
#if defined(CRAWLER_ASAN)
  static constexpr size_t kRedzone = 16;
  static void Poison(void* p, size_t n) { __asan_poison_memory_region(p, n); }
  static void Unpoison(void* p, size_t n) { __asan_unpoison_memory_region(p, n); }
#else
  static constexpr size_t kRedzone = 0;
  static void Poison(void*, size_t) {}
  static void Unpoison(void*, size_t) {}
#endif

  void* Take(size_t size) {
    size_t need = (size + kRedzone + 15) & ~size_t{15};
    while (current_ < chunks_.size()) {
      Chunk& c = chunks_[current_];
      if (c.size - c.used >= need) {
        char* p = c.data + c.used;
        c.used += need;
        Unpoison(p, size);  // the rest of the chunk stays poisoned
        return p;
      }
      ++current_;
    }
    size_t bytes = std::max(need, kChunkBytes);
    char* data = static_cast<char*>(std::malloc(bytes));
    if (data == nullptr) throw std::bad_alloc();
    chunks_.push_back(Chunk{data, bytes, need});
    current_ = chunks_.size() - 1;
    Poison(data, bytes);
    Unpoison(data, size);
    return data;
  }

  std::vector<Chunk> chunks_;
  size_t current_ = 0;
};

GumboArena& ThreadArena() {
  static thread_local GumboArena arena;
  return arena;
}

class Extractor {
 public:
  Extractor(std::string_view page_url, const ExtractOptions& options)
      : options_(options), resolver_(std::make_unique<UrlResolver>(page_url)) {
    result_.base = std::string(page_url);
  }

  void Walk(const GumboNode* root) {
    // Iterative pre-order walk: document order, no recursion.
    std::vector<const GumboNode*> stack = {root};
    while (!stack.empty()) {
      const GumboNode* node = stack.back();
      stack.pop_back();
      NoteScriptSignals(*node, result_.signals);
      if (node->type != GUMBO_NODE_ELEMENT && node->type != GUMBO_NODE_TEMPLATE) continue;
      const GumboElement& e = node->v.element;
      Visit(e);
      for (unsigned i = e.children.length; i-- > 0;) {
        stack.push_back(static_cast<const GumboNode*>(e.children.data[i]));
      }
    }
  }

  ExtractResult Take() { return std::move(result_); }

  // The URLs of a stylesheet, a <style> element or a style attribute.
  void AddCss(std::string_view css) {
    for (const std::string& url : CssUrls(css)) AddHref(url, LinkSource::kCss, false);
  }

 private:
  void Visit(const GumboElement& e) {
    if (options_.include_assets) VisitAssets(e);
    switch (e.tag) {
      case GUMBO_TAG_BASE:
        if (!base_seen_) {
          if (const char* href = Attr(e, "href")) {
            UrlResult b = resolver_->Resolve(href, options_.url);
            if (b.ok()) {
              result_.base = b.value();
              resolver_ = std::make_unique<UrlResolver>(result_.base);
            }
            base_seen_ = true;
          }
        }
        break;
      case GUMBO_TAG_A:
        Add(e, "href", LinkSource::kAnchor);
        break;
      case GUMBO_TAG_AREA:
        Add(e, "href", LinkSource::kArea);
        break;
      case GUMBO_TAG_FRAME:
        Add(e, "src", LinkSource::kFrame);
        break;
      case GUMBO_TAG_IFRAME:
        Add(e, "src", LinkSource::kIframe);
        break;
      case GUMBO_TAG_LINK: {
        const char* rel = Attr(e, "rel");
        if (rel == nullptr) break;
        if (HasToken(rel, "canonical") || HasToken(rel, "alternate") ||
            HasToken(rel, "next") || HasToken(rel, "prev")) {
          Add(e, "href", LinkSource::kLink);
        }
        break;
      }
      case GUMBO_TAG_META: {
        const char* equiv = Attr(e, "http-equiv");
        const char* content = Attr(e, "content");
        if (content == nullptr) break;
        if (equiv != nullptr && LowerAscii(TrimSpace(equiv)) == "refresh") {
          std::string_view target = RefreshTarget(content);
          if (!target.empty()) AddHref(target, LinkSource::kMetaRefresh, false);
        }
        const char* name = Attr(e, "name");
        if (name != nullptr && LowerAscii(TrimSpace(name)) == "robots") {
          if (HasToken(content, "nofollow") || HasToken(content, "none"))
            result_.meta_nofollow = true;
          if (HasToken(content, "noindex") || HasToken(content, "none"))
            result_.meta_noindex = true;
        }
        break;
      }
      default:
        break;
    }
  }

  // Page requisites (include_assets): what a browser loads to show the page.
  void VisitAssets(const GumboElement& e) {
    if (const char* style = Attr(e, "style")) AddCss(style);
    switch (e.tag) {
      case GUMBO_TAG_IMG:
        Add(e, "src", LinkSource::kImg);
        AddSrcset(e);
        break;
      case GUMBO_TAG_SOURCE:
        Add(e, "src", LinkSource::kMedia);
        AddSrcset(e);
        break;
      case GUMBO_TAG_VIDEO:
        Add(e, "poster", LinkSource::kMedia);
        Add(e, "src", LinkSource::kMedia);
        break;
      case GUMBO_TAG_AUDIO:
      case GUMBO_TAG_TRACK:
      case GUMBO_TAG_EMBED:
        Add(e, "src", LinkSource::kMedia);
        break;
      case GUMBO_TAG_INPUT:
        if (const char* type = Attr(e, "type");
            type != nullptr && HasToken(type, "image"))
          Add(e, "src", LinkSource::kImg);
        break;
      case GUMBO_TAG_SCRIPT:
        Add(e, "src", LinkSource::kScript);
        break;
      case GUMBO_TAG_STYLE:
        AddCss(Text(e));
        break;
      case GUMBO_TAG_LINK: {
        const char* rel = Attr(e, "rel");
        if (rel == nullptr) break;
        if (HasToken(rel, "stylesheet")) {
          Add(e, "href", LinkSource::kStylesheet);
        } else if (HasToken(rel, "icon") || HasToken(rel, "apple-touch-icon") ||
                   HasToken(rel, "preload") || HasToken(rel, "modulepreload") ||
                   HasToken(rel, "manifest")) {
          Add(e, "href", LinkSource::kLinkAsset);
        }
        break;
      }
      default:
        break;
    }
  }

  // The text of an element's text children (a <style>'s stylesheet).
  static std::string Text(const GumboElement& e) {
    std::string text;
    for (unsigned i = 0; i < e.children.length; ++i) {
      const auto* child = static_cast<const GumboNode*>(e.children.data[i]);
      if (child->type == GUMBO_NODE_TEXT || child->type == GUMBO_NODE_WHITESPACE ||
          child->type == GUMBO_NODE_CDATA)
        text += child->v.text.text;
    }
    return text;
  }

  // srcset (HTML "parse a srcset attribute"): candidates split at commas,
  // each a URL (a run of non-whitespace; trailing commas end it) and then
  // descriptors up to the next comma outside parentheses.
  void AddSrcset(const GumboElement& e) {
    const char* value = Attr(e, "srcset");
    if (value == nullptr) return;
    std::string_view s(value);
    auto space = [](char c) {
      return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
    };
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && (space(s[i]) || s[i] == ',')) ++i;
      size_t start = i;
      while (i < s.size() && !space(s[i])) ++i;
      std::string_view url = s.substr(start, i - start);
      if (url.empty()) break;
      if (url.back() == ',') {
        while (!url.empty() && url.back() == ',') url.remove_suffix(1);
      } else {
        int parens = 0;
        for (; i < s.size() && (s[i] != ',' || parens > 0); ++i) {
          if (s[i] == '(') ++parens;
          if (s[i] == ')' && parens > 0) --parens;
        }
      }
      if (!url.empty()) AddHref(url, LinkSource::kSrcset, false);
    }
  }

  void Add(const GumboElement& e, const char* attr, LinkSource source) {
    const char* value = Attr(e, attr);
    if (value == nullptr) return;
    const char* rel = Attr(e, "rel");
    AddHref(value, source, rel != nullptr && HasToken(rel, "nofollow"));
  }

  void AddHref(std::string_view href, LinkSource source, bool nofollow) {
    std::string_view h = TrimSpace(href);
    std::string scheme;
    for (size_t i = 0; i < h.size() && i < 16; ++i) {
      if (h[i] == ':') {
        scheme = LowerAscii(h.substr(0, i));
        break;
      }
      if (h[i] == '/' || h[i] == '?' || h[i] == '#') break;
    }
    SkipCounts& s = result_.skipped;
    if (scheme == "javascript") {
      ++s.javascript;
      return;
    }
    if (scheme == "mailto") {
      ++s.mailto;
      return;
    }
    if (scheme == "data") {
      ++s.data;
      return;
    }
    if (h.size() > options_.url.max_length) {
      ++s.too_long;
      return;
    }
    UrlResult r = resolver_->Resolve(href, options_.url);
    if (!r.ok()) {
      if (r.status().code() == Status::Code::kNotSupported) {
        ++s.other_scheme;
      } else if (r.status().code() == Status::Code::kOutOfRange) {
        ++s.too_long;
      } else {
        ++s.unparsable;
      }
      return;
    }
    result_.links.push_back(
        Link{std::string(href), std::move(r).value(), source, nofollow});
  }

  const ExtractOptions& options_;
  std::unique_ptr<UrlResolver> resolver_;  // of result_.base
  ExtractResult result_;
  bool base_seen_ = false;
};

}  // namespace

const char* LinkSourceName(LinkSource source) {
  switch (source) {
    case LinkSource::kAnchor:
      return "a";
    case LinkSource::kArea:
      return "area";
    case LinkSource::kLink:
      return "link";
    case LinkSource::kFrame:
      return "frame";
    case LinkSource::kIframe:
      return "iframe";
    case LinkSource::kMetaRefresh:
      return "meta-refresh";
    case LinkSource::kImg:
      return "img";
    case LinkSource::kScript:
      return "script";
    case LinkSource::kStylesheet:
      return "stylesheet";
    case LinkSource::kLinkAsset:
      return "link-asset";
    case LinkSource::kSrcset:
      return "srcset";
    case LinkSource::kMedia:
      return "media";
    case LinkSource::kCss:
      return "css";
  }
  return "?";
}

bool IsRequisite(LinkSource source) {
  switch (source) {
    case LinkSource::kImg:
    case LinkSource::kScript:
    case LinkSource::kStylesheet:
    case LinkSource::kLinkAsset:
    case LinkSource::kSrcset:
    case LinkSource::kMedia:
    case LinkSource::kCss:
      return true;
    default:
      return false;
  }
}

std::string Windows1252ToUtf8(std::string_view bytes) {
  // 0x80..0x9F in windows-1252 (0 = undefined: mapped to U+FFFD).
  static constexpr uint16_t kHigh[32] = {
      0x20AC, 0,      0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
      0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0,      0x017D, 0,
      0,      0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
      0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0,      0x017E, 0x0178};
  std::string out;
  out.reserve(bytes.size() + bytes.size() / 8);
  for (char ch : bytes) {
    auto b = static_cast<unsigned char>(ch);
    uint32_t cp = b;
    if (b < 0x80) {
      out += ch;
      continue;
    }
    if (b < 0xA0) cp = kHigh[b - 0x80] ? kHigh[b - 0x80] : 0xFFFD;
    if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return out;
}

ExtractResult ExtractCssLinks(std::string_view css, std::string_view sheet_url,
                              const ExtractOptions& options) {
  Extractor extractor(sheet_url, options);
  extractor.AddCss(css);
  return extractor.Take();
}

ExtractResult ExtractLinks(std::string_view html, std::string_view page_url,
                           std::string_view charset, const ExtractOptions& options) {
  std::string cs = LowerAscii(TrimSpace(charset));
  std::string converted;
  bool single_byte = cs == "iso-8859-1" || cs == "latin1" || cs == "latin-1" ||
                     cs == "windows-1252" || cs == "cp1252" || cs == "us-ascii" ||
                     cs == "ascii" || cs == "iso8859-1";
  if (single_byte || (cs.empty() && !ValidUtf8(html))) {
    converted = Windows1252ToUtf8(html);
    html = converted;
  }
  GumboArena& arena = ThreadArena();
  const GumboOptions gumbo_options = arena.Options();
  struct ResetAtExit {
    GumboArena& arena;
    ~ResetAtExit() { arena.Reset(); }  // the tree dies here, even on an exception
  } reset{arena};
  const GumboOutput* output =
      gumbo_parse_with_options(&gumbo_options, html.data(), html.size());
  Extractor extractor(page_url, options);
  if (output != nullptr) extractor.Walk(output->root);
  return extractor.Take();
}

}  // namespace crawler::parsers
