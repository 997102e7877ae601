// URL resolution and normalization: the dedup key and the URL that is fetched.
//
// Built on Boost.URL (parsing, RFC 3986 resolution, percent-encoding
// normalization) with the crawler's own rules on top. Pure functions: any
// thread, no shared state.
//
// ResolveReference is RFC 3986 section 5.2 exactly (strict parser: "http:g"
// stays "http:g"; "../" above the root is dropped, as in 5.4.2).
//
// ResolveHref is what a browser does with an href (WHATWG URL Standard):
//   followed:  leading/trailing C0 controls and spaces are stripped; tabs and
//              newlines anywhere are removed; in http(s) URLs "\" is "/"
//              before the query; "http:g" with an http base is relative
//              (5.4.2's "backward compatible" reading); spaces, quotes, <, >,
//              `, {, }, |, ^ and non-ASCII bytes are percent-encoded (UTF-8).
//              Non-ASCII hosts go through UTS #46 (libidn2: NFC, mapping,
//              non-transitional, disallowed code points rejected) to punycode.
//              A "%" that starts no escape is a "%" ("%25", as wget sends
//              it). A ':' in the first segment of a relative href is a path
//              ("10:30.html"). Another special scheme without "//"
//              ("https:/x.org", "https:x.org") and extra slashes
//              ("///x.org/p") still introduce the authority. An empty
//              userinfo is none ("http://@x.org/" is "http://x.org/").
//              A host whose last label is a number is an IPv4 address in
//              any of WHATWG's forms ("0x7f.1", "0300.0250.1.1", "127.1",
//              "3232235777" -> dotted decimal, "1.2.3.4." too) or an error
//              ("1.2.3.4.5"). The userinfo ends at the last '@' (an earlier
//              '@', '[', ']', ';', '=' and a second ':' are encoded). A "'"
//              in the query is "%27". IPv6 literals are serialized as
//              WHATWG does ("[::127.0.0.1]" -> "[::7f00:1]"). An "xn--"
//              label must decode to a valid label ("xn--pokxncvks" is
//              refused). (src/href.h; the same for NormalizeUrl's absolute
//              URLs.) Conformance: tests/parsers/urltestdata_test.cc.
//
// NormalizeUrl applies the safe rules (RFC 3986 6.2.2 plus scheme rules):
//   lowercase scheme and host; drop the default port; empty path -> "/";
//   remove dot segments; decode %XX of unreserved characters only and
//   uppercase the hex of the rest (so %2F, %3F, %23 stay encoded); drop the
//   fragment; drop a lone trailing "?"; IDN hosts -> UTS #46 + punycode
//   ("xn--", libidn2); only http and https.
// and, when switched on in UrlOptions, the lossy ones: sort query
// parameters, strip tracking parameters (utm_*, fbclid, gclid, ...), strip
// session ids (jsessionid, phpsessid, sid=<32 hex>), strip a leading "www.".
// Normalization is idempotent: Normalize(Normalize(u)) == Normalize(u).
#ifndef PARSERS_URL_H_
#define PARSERS_URL_H_

#include <boost/url/url_view.hpp>
#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"

namespace crawler::parsers {

struct UrlOptions {
  bool sort_query = false;
  bool strip_tracking = false;
  bool strip_session_ids = false;
  bool strip_www = false;
  size_t max_length = 2048;  // bytes of the normalized URL
};

// A normalized URL, or the reason there is none ("no scheme", "bad port
// '99999'", "bad percent-escape", "host longer than 253 bytes", ...) as a
// Status: kNotSupported for a scheme other than http(s), kOutOfRange for a
// URL longer than UrlOptions::max_length, kInvalidArgument for the rest.
using UrlResult = Result<std::string>;

// Normalizes an absolute URL (after the browser clean-up above).
UrlResult NormalizeUrl(std::string_view url, const UrlOptions& options = {});

// Resolves an href found on the page at `base` (itself a normalized URL),
// then normalizes the result.
UrlResult ResolveHref(std::string_view base, std::string_view href,
                      const UrlOptions& options = {});

// ResolveHref for many hrefs of one page: parses the base once.
// Immutable after construction (any thread may call Resolve); it refers to
// its own copy of the base, so it is neither copyable nor movable.
class UrlResolver {
 public:
  explicit UrlResolver(std::string_view base);
  UrlResolver(const UrlResolver&) = delete;
  UrlResolver& operator=(const UrlResolver&) = delete;

  UrlResult Resolve(std::string_view href, const UrlOptions& options = {}) const;
  const std::string& base() const { return base_; }

 private:
  std::string base_;
  boost::urls::url_view view_;  // into base_
  std::string scheme_;          // lowercase
  std::string
      origin_[2];  // normalized "scheme://host[:port]", keeping / stripping "www."
  bool ok_ = false;
};

// RFC 3986 5.2 resolution only (no normalization, any scheme).
UrlResult ResolveReference(std::string_view base, std::string_view reference);

}  // namespace crawler::parsers

#endif  // PARSERS_URL_H_
