// An href as a browser reads it (WHATWG URL Standard), before RFC 3986
// parsing: the clean-up and the repairs of parsers/url.h. Internal to
// crawler::parsers.
#ifndef PARSERS_HREF_H_
#define PARSERS_HREF_H_

#include <optional>
#include <string>
#include <string_view>

#include "parsers/url.h"

namespace crawler::parsers::href {

// The scheme of `s` if it starts with one (ALPHA *(ALPHA / DIGIT / + - .) ":").
std::string_view SchemeOf(std::string_view s);
bool IsSpecial(std::string_view scheme);  // http or https

// The input without ASCII tabs and newlines (WHATWG removes them anywhere
// before it parses, so a scheme is read after this: "http\r:" is "http:").
std::string WithoutTabsOrNewlines(std::string_view in);

// Strips leading and trailing C0 controls and spaces, removes tabs and
// newlines (first: WithoutTabsOrNewlines), drops the fragment; in a special URL "\" is
// "/" before the query; percent-encodes spaces, quotes, <, >, `, {, }, |, ^, brackets
// outside the host, non-ASCII bytes, and a "%" that does not start an
// escape (as "%25"); in a special URL also "'" in the query, and in the
// userinfo (which ends at the last '@') '@', '[', ']', ';', '=' and a
// second ':'; the trailing '.' of a numeric host ("1.2.3.4.") is dropped.
// Never fails.
std::string Clean(std::string_view in, bool special);

// The WHATWG repairs of a cleaned http(s) href against a base whose scheme
// is `base_scheme` ("" when there is no base), giving an RFC 3986 reference
// with the same meaning:
//   "http:g" (the base's scheme, no "//")      -> "g" (relative)
//   "https:/x.org/p", "https:x.org/p" (another
//     special scheme, or no base)               -> "https://x.org/p"
//   "///x.org/p", "http:///x.org/p"             -> "//x.org/p", "http://x.org/p"
//   "10:30-meeting.html", "_a:b" (a ':' in a
//     first segment that is not a scheme)       -> "./10:30-meeting.html"
std::string Repair(std::string_view cleaned, std::string_view base_scheme);

// The WHATWG IPv4 parser, for a host Boost.URL reads as a name: a host
// whose last label is a number ("127.1", "0x7f.0.0.1", "0300.0250.1.1",
// "3232235777") is an IPv4 address in dotted decimal, or no valid host at
// all ("1.2.3.4.5", "example.300"): an error. nullopt: not a number-ended
// host (a name). `host` is lowercase ASCII.
std::optional<Result<std::string>> ParseIpv4(std::string_view host);

// An IPv6 literal ("[...]", as Boost.URL validated it) as WHATWG serializes
// it: lowercase hex pieces without leading zeros, the first longest run of
// two or more zero pieces as "::", no dotted-quad tail ("[::127.0.0.1]" is
// "[::7f00:1]"): one key per address.
std::string CanonicalIpv6(std::string_view bracketed);

}  // namespace crawler::parsers::href

#endif  // PARSERS_HREF_H_
