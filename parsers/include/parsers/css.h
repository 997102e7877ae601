// The URLs a stylesheet loads: `url(...)`, `src("...")`, `@import "..."`
// and the strings of `image-set(...)`, in document order, as written (escapes
// decoded, not yet resolved). For crawl.include_assets: Heritrix's
// ExtractorCSS and `wget -p` follow the same.
//
// A tokenizer for the part of CSS Syntax Level 3 section 4 that decides what
// a URL is: comments, strings (an unescaped newline ends one as a bad
// string), escapes (hex code points, line continuations), ident sequences
// (so `u\72 l(` is `url(`), url tokens (bad ones skipped to their `)`) and
// functions. Nothing else of CSS is parsed: a declaration that is invalid
// CSS still gives its URL, as browsers' preloaders do.
//
// No Debian package fits: libcss-parser (htmlcxx) knows CSS1 only;
// litehtml's and Modest's tokenizers are inside a renderer (and Modest is
// unmaintained since 2021). This one is ~200 lines, fuzzed (css_fuzz).
//
// Pure function: any thread; linear in the input, no recursion.
#ifndef PARSERS_CSS_H_
#define PARSERS_CSS_H_

#include <string>
#include <string_view>
#include <vector>

namespace crawler::parsers {

std::vector<std::string> CssUrls(std::string_view css);

}  // namespace crawler::parsers

#endif  // PARSERS_CSS_H_
