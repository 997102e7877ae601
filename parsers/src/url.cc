// URL resolution and normalization; see parsers/url.h for the rules.
#include "parsers/url.h"

#include <idn2.h>

#include <algorithm>
#include <boost/url.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ascii.h"
#include "href.h"

namespace crawler::parsers {
namespace {

Status UrlError(std::string why, Status::Code code = Status::Code::kInvalidArgument) {
  return Status::Error(code, std::move(why));
}

namespace urls = boost::urls;

constexpr size_t kMaxHostLength = 253;  // DNS: 255 octets on the wire, 253 as text
constexpr size_t kMaxLabelLength = 63;

using ascii::IsAlpha;
using ascii::IsDigit;
using ascii::IsHex;
using ascii::Lower;
using ascii::LowerAscii;
using ascii::NormalizePercent;

using crawler::ascii::EqualsIgnoreCase;
using href::IsSpecial;
using href::SchemeOf;

// A clear reason for a string Boost.URL would not parse as an absolute URL.
std::string Diagnose(std::string_view s, const boost::system::error_code& ec) {
  if (s.empty()) return "empty URL";
  if (SchemeOf(s).empty()) return "no scheme";
  size_t start = SchemeOf(s).size() + 1;
  if (s.substr(start, 2) == "//") {
    size_t end = s.find_first_of("/?#", start + 2);
    std::string_view authority =
        s.substr(start + 2, end == std::string_view::npos ? std::string_view::npos
                                                          : end - start - 2);
    size_t at = authority.rfind('@');
    std::string_view hostport =
        at == std::string_view::npos ? authority : authority.substr(at + 1);
    size_t colon = hostport.rfind(':');
    if (colon != std::string_view::npos && hostport.find(']') == std::string_view::npos) {
      std::string_view port = hostport.substr(colon + 1);
      if (!std::all_of(port.begin(), port.end(), IsDigit)) {
        return "bad port '" + std::string(port) + "'";
      }
    }
    return "bad host or authority '" + std::string(authority) + "' (" + ec.message() +
           ")";
  }
  return "not a valid URL (" + ec.message() + ")";
}

std::string PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && IsHex(s[i + 1]) && IsHex(s[i + 2])) {
      out +=
          static_cast<char>(ascii::HexValue(s[i + 1]) * 16 + ascii::HexValue(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// A registered-name host: percent-decoded, lowercased, IDN labels to punycode,
// checked for length and characters.
UrlResult NormalizeHostNameOnly(std::string_view encoded);

// A registered-name host, or (WHATWG) an IPv4 address in another form.
UrlResult NormalizeHostName(std::string_view encoded) {
  UrlResult name = NormalizeHostNameOnly(encoded);
  if (!name.ok()) return name;
  std::optional<UrlResult> ipv4 = href::ParseIpv4(name.value());
  return ipv4 ? std::move(*ipv4) : name;
}

// Whether a label of `host` starts with "xn--" (any case): punycode.
bool HasAceLabel(std::string_view host) {
  for (size_t start = 0; start < host.size();) {
    if (host.size() - start >= 4 && EqualsIgnoreCase(host.substr(start, 4), "xn--"))
      return true;
    size_t dot = host.find('.', start);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return false;
}

UrlResult NormalizeHostNameOnly(std::string_view encoded) {
  // Fast path: already lowercase LDH labels of sane length (most hosts).
  if (!encoded.empty() && encoded.size() <= kMaxHostLength && encoded.front() != '.' &&
      encoded.find("..") == std::string_view::npos && !HasAceLabel(encoded) &&
      std::all_of(encoded.begin(), encoded.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || IsDigit(c) || c == '-' || c == '.' || c == '_';
      })) {
    size_t label = 0;
    bool short_labels = true;
    for (char c : encoded) {
      label = c == '.' ? 0 : label + 1;
      short_labels &= label <= kMaxLabelLength;
    }
    if (short_labels) return UrlResult(std::string(encoded));
  }
  std::string host = PercentDecode(encoded);
  if (host.empty()) return UrlError("no host");
  if (std::any_of(host.begin(), host.end(),
                  [](char c) { return static_cast<unsigned char>(c) >= 0x80; }) ||
      HasAceLabel(host)) {
    // An "xn--" label is checked too: it must decode to a valid label
    // ("xn--pokxncvks" does not: browsers refuse it).
    // IDNA: UTS #46 mapping (non-transitional, as browsers do: "faß" stays
    // "faß") and punycode, by libidn2.
    if (host.find('\0') != std::string::npos)
      return UrlError("bad character NUL in host");
    char* ascii = nullptr;
    int rc =
        idn2_to_ascii_8z(host.c_str(), &ascii, IDN2_NFC_INPUT | IDN2_NONTRANSITIONAL);
    bool ascii_input = std::none_of(host.begin(), host.end(), [](char c) {
      return static_cast<unsigned char>(c) >= 0x80;
    });
    if (rc == IDN2_DISALLOWED && ascii_input) {
      // Punycode of a code point UTS #46 allows and IDNA2008 does not
      // (libidn2 checks both): "xn--n3h" (a snowman) is a host browsers
      // and DNS serve, kept as written (lowercased below).
    } else if (rc != IDN2_OK) {
      return UrlError("bad host: " + std::string(idn2_strerror(rc)));
    } else {
      host = ascii;
      idn2_free(ascii);
    }
    // UTS #46 maps some code points to nothing (U+00AD soft hyphen).
    if (host.empty()) return UrlError("no host (its characters map to nothing in IDNA)");
  }
  std::string out;
  size_t start = 0;
  while (start <= host.size()) {
    size_t dot = host.find('.', start);
    if (dot == std::string::npos) dot = host.size();
    std::string label = LowerAscii(std::string_view(host).substr(start, dot - start));
    for (char c : label) {
      if (!IsAlpha(c) && !IsDigit(c) && c != '-' && c != '_') {
        return UrlError("bad character '" + std::string(1, c) + "' in host '" + host +
                        "'");
      }
    }
    if (label.size() > kMaxLabelLength) {
      return UrlError("host label longer than 63 bytes in '" + host + "'",
                      Status::Code::kOutOfRange);
    }
    if (label.empty() && dot != host.size()) {
      return UrlError("empty label in host '" + host + "'");
    }
    if (!out.empty() || start > 0) out += '.';
    out += label;
    start = dot + 1;
    if (dot == host.size()) break;
  }
  if (out.size() > kMaxHostLength) {
    return UrlError("host longer than 253 bytes", Status::Code::kOutOfRange);
  }
  return UrlResult(std::move(out));
}

bool IsTrackingParam(std::string_view key) {
  std::string k = LowerAscii(key);
  if (k.rfind("utm_", 0) == 0) return true;
  static constexpr std::string_view kTrackers[] = {
      "fbclid", "gclid",  "dclid",  "gclsrc", "msclkid", "yclid",
      "igshid", "mc_cid", "mc_eid", "_ga",    "_gl",     "mkt_tok"};
  return std::find(std::begin(kTrackers), std::end(kTrackers), k) != std::end(kTrackers);
}

bool IsSessionParam(std::string_view key, std::string_view value) {
  std::string k = LowerAscii(key);
  if (k == "jsessionid" || k == "phpsessid" || k == "aspsessionid" || k == "sessionid")
    return true;
  return k == "sid" && value.size() == 32 &&
         std::all_of(value.begin(), value.end(), IsHex);
}

// Applies the lossy query rules to an already normalized encoded query.
std::string RewriteQuery(std::string_view query, const UrlOptions& o) {
  std::vector<std::string_view> params;
  size_t start = 0;
  while (start <= query.size()) {
    size_t amp = query.find('&', start);
    if (amp == std::string_view::npos) amp = query.size();
    std::string_view p = query.substr(start, amp - start);
    size_t eq = p.find('=');
    std::string_view key = p.substr(0, eq);
    std::string_view value =
        eq == std::string_view::npos ? std::string_view() : p.substr(eq + 1);
    bool drop = p.empty() || (o.strip_tracking && IsTrackingParam(key)) ||
                (o.strip_session_ids && IsSessionParam(key, value));
    if (!drop) params.push_back(p);
    start = amp + 1;
  }
  if (o.sort_query) std::stable_sort(params.begin(), params.end());
  std::string out;
  for (size_t i = 0; i < params.size(); ++i) {
    if (i) out += '&';
    out += params[i];
  }
  return out;
}

// ";jsessionid=..." path parameters (Java servlet session ids).
std::string StripPathSessionIds(std::string_view path) {
  std::string out;
  size_t i = 0;
  while (i < path.size()) {
    size_t semi = path.find(';', i);
    if (semi == std::string_view::npos) {
      out.append(path.substr(i));
      break;
    }
    out.append(path.substr(i, semi - i));
    size_t end = path.find_first_of("/;", semi + 1);
    if (end == std::string_view::npos) end = path.size();
    std::string_view param = path.substr(semi + 1, end - semi - 1);
    std::string_view key = param.substr(0, param.find('='));
    if (!IsSessionParam(key, param.substr(std::min(param.size(), key.size() + 1)))) {
      out.append(path.substr(semi, end - semi));
    }
    i = end;
  }
  return out;
}

// RFC 3986 5.2.4 on an encoded path, by hand: Boost.URL 1.81's resolve() gives
// "http://a/../g" for RFC 5.4.2's "../../../g" case (boostorg/url#808).
std::string RemoveDotSegments(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  auto pop_segment = [&out] {
    size_t slash = out.rfind('/');
    out.erase(slash == std::string::npos ? 0 : slash);
  };
  while (!in.empty()) {
    if (in.starts_with("../")) {
      in.remove_prefix(3);
    } else if (in.starts_with("./")) {
      in.remove_prefix(2);
    } else if (in.starts_with("/./")) {
      in.remove_prefix(2);
    } else if (in == "/.") {
      in = "/";
    } else if (in.starts_with("/../")) {
      in.remove_prefix(3);
      pop_segment();
    } else if (in == "/..") {
      in = "/";
      pop_segment();
    } else if (in == "." || in == "..") {
      in = {};
    } else {
      size_t next = in.find('/', 1);
      if (next == std::string_view::npos) next = in.size();
      out.append(in.substr(0, next));
      in.remove_prefix(next);
    }
  }
  return out;
}

// "scheme://[userinfo@]host[:port]" of `u`'s authority, normalized; `scheme`
// is already lowercase http or https.
UrlResult NormalizeOrigin(std::string_view scheme, const urls::url_view& u,
                          const UrlOptions& o) {
  if (!u.has_authority() || u.encoded_host().empty()) return UrlError("no host");
  std::string out(scheme);
  out += "://";
  // As WHATWG serializes it: an empty password drops its ':', and an empty
  // userinfo its '@' ("http://@host/" is "http://host/").
  if (u.has_userinfo()) {
    // WHATWG's userinfo set, encoded here too: a userinfo Clean did not see
    // as one (an authority Repair added) serializes as it would have.
    auto encode = [](std::string_view in) {
      std::string encoded;
      for (char c : in) {
        if (c == '@' || c == ':' || c == '[' || c == ']' || c == ';' || c == '=') {
          static constexpr char kHex[] = "0123456789ABCDEF";
          encoded += '%';
          encoded += kHex[static_cast<unsigned char>(c) >> 4];
          encoded += kHex[static_cast<unsigned char>(c) & 15];
        } else {
          encoded += c;
        }
      }
      return encoded;
    };
    std::string user = encode(NormalizePercent(u.encoded_user()));
    std::string password =
        u.has_password() ? encode(NormalizePercent(u.encoded_password())) : "";
    if (!user.empty() || !password.empty()) {
      out += user;
      if (!password.empty()) out += ':' + password;
      out += '@';
    }
  }
  switch (u.host_type()) {
    case urls::host_type::name: {
      UrlResult h = NormalizeHostName(u.encoded_host());
      if (!h.ok()) return h;
      std::string_view host = h.value();
      // Repeatedly, so that normalizing twice changes nothing.
      while (o.strip_www && host.starts_with("www.") && host.size() > 4)
        host.remove_prefix(4);
      out += host;
      break;
    }
    case urls::host_type::ipv6:
      out += href::CanonicalIpv6(u.encoded_host());
      break;
    case urls::host_type::ipvfuture:
      out += LowerAscii(u.encoded_host());
      break;
    default:  // ipv4: canonical already (Boost.URL accepts only dotted decimal)
      out += u.encoded_host();
      break;
  }
  if (u.has_port() && !u.port().empty()) {
    std::string_view port = u.port();
    if (!std::all_of(port.begin(), port.end(), IsDigit)) {
      return UrlError("bad port '" + std::string(port) + "'");
    }
    uint64_t n = 0;
    for (char c : port) {
      n = n * 10 + static_cast<uint64_t>(c - '0');
      if (n > 65535)
        return UrlError("bad port '" + std::string(port) + "' (above 65535)");
    }
    if (n == 0) return UrlError("bad port '0'");
    if (!((scheme == "http" && n == 80) || (scheme == "https" && n == 443))) {
      out += ':';
      out += std::to_string(n);
    }
  }
  return UrlResult(std::move(out));
}

// Appends the normalized path and query to `origin` (the fragment is never
// part of the result) and checks the length.
UrlResult AppendPathQuery(std::string origin, std::string_view path,
                          std::optional<std::string_view> query, const UrlOptions& o) {
  std::string p = NormalizePercent(path);
  // Session ids go before dot segments: "/a/..;jsessionid=1" must become "/"
  // at once, not "/a/.." now and "/" when normalized again.
  if (o.strip_session_ids) p = StripPathSessionIds(p);
  p = RemoveDotSegments(p);
  if (p.empty()) p = "/";
  std::string out = std::move(origin);
  out += p;
  if (query) {
    std::string q = NormalizePercent(*query);
    if (o.sort_query || o.strip_tracking || o.strip_session_ids) q = RewriteQuery(q, o);
    if (!q.empty()) {  // a lone "?" is dropped
      out += '?';
      out += q;
    }
  }
  if (out.size() > o.max_length) {
    return UrlError("URL longer than " + std::to_string(o.max_length) + " bytes (" +
                        std::to_string(out.size()) + ")",
                    Status::Code::kOutOfRange);
  }
  return UrlResult(std::move(out));
}

std::optional<std::string_view> QueryOf(const urls::url_view& u) {
  if (!u.has_query()) return std::nullopt;
  return std::string_view(u.encoded_query());
}

// Lowercased http/https scheme of `u`, or the error.
UrlResult HttpScheme(const urls::url_view& u) {
  if (!u.has_scheme()) return UrlError("no scheme");
  std::string scheme = LowerAscii(u.scheme());
  if (scheme != "http" && scheme != "https") {
    return Status::Error(Status::Code::kNotSupported,
                         "scheme '" + scheme + "' is not http or https");
  }
  return UrlResult(std::move(scheme));
}

UrlResult NormalizeParsed(const urls::url_view& u, const UrlOptions& o) {
  UrlResult scheme = HttpScheme(u);
  if (!scheme.ok()) return scheme;
  UrlResult origin = NormalizeOrigin(scheme.value(), u, o);
  if (!origin.ok()) return origin;
  return AppendPathQuery(std::move(origin.value()), u.encoded_path(), QueryOf(u), o);
}

}  // namespace

namespace {

UrlResult ResolveAgainst(const urls::url_view& base, std::string_view reference);

// Parses and normalizes a string that is already clean (see Clean).
UrlResult NormalizeClean(std::string_view clean, const UrlOptions& options) {
  auto parsed = urls::parse_uri(clean);
  if (!parsed) return UrlError(Diagnose(clean, parsed.error()));
  // Boost.URL 1.81 accepts "http://a:8x/" as port "8" and path "x/"; a path
  // after an authority must start with "/".
  if (parsed->has_authority() && !parsed->encoded_path().empty() &&
      parsed->encoded_path().front() != '/') {
    return UrlError(Diagnose(clean, boost::system::errc::make_error_code(
                                        boost::system::errc::invalid_argument)));
  }
  return NormalizeParsed(*parsed, options);
}

}  // namespace

UrlResult NormalizeUrl(std::string_view url, const UrlOptions& options) {
  // Tabs and newlines go before the scheme is read, as in Clean (the url
  // fuzzer: "http\r://a?'" was not special, so its "'" stayed).
  const std::string no_tabs = href::WithoutTabsOrNewlines(url);
  url = no_tabs;
  // The scheme after the leading C0 controls and spaces Clean strips (the
  // url fuzzer: "\0http://e/?'" was not special, so its "'" stayed and the
  // second normalization encoded it).
  size_t lead = 0;
  while (lead < url.size() && static_cast<unsigned char>(url[lead]) <= 0x20) ++lead;
  bool special = IsSpecial(SchemeOf(url.substr(lead)));
  std::string cleaned = href::Clean(url, special);
  return NormalizeClean(special ? href::Repair(cleaned, "") : cleaned, options);
}

UrlResult ResolveReference(std::string_view base, std::string_view reference) {
  auto b = urls::parse_uri(base);
  if (!b) return UrlError("base: " + Diagnose(base, b.error()));
  return ResolveAgainst(*b, reference);
}

namespace {

UrlResult ResolveAgainst(const urls::url_view& base, std::string_view reference) {
  const urls::url_view* b = &base;
  auto r = urls::parse_uri_reference(reference);
  if (!r)
    return UrlError("reference: not a valid URI reference (" + r.error().message() + ")");
  // RFC 3986 5.2.2, then recomposition as in 5.3.
  std::string_view scheme = b->scheme();
  std::optional<std::string_view> authority;
  std::string path;
  std::optional<std::string_view> query;
  if (r->has_scheme()) {
    scheme = r->scheme();
    if (r->has_authority()) authority = r->encoded_authority();
    path = RemoveDotSegments(r->encoded_path());
    if (r->has_query()) query = r->encoded_query();
  } else {
    if (r->has_authority()) {
      authority = r->encoded_authority();
      path = RemoveDotSegments(r->encoded_path());
      if (r->has_query()) query = r->encoded_query();
    } else {
      if (r->encoded_path().empty()) {
        path = b->encoded_path();
        if (r->has_query()) {
          query = r->encoded_query();
        } else if (b->has_query()) {
          query = b->encoded_query();
        }
      } else {
        if (r->encoded_path().starts_with("/")) {
          path = RemoveDotSegments(r->encoded_path());
        } else {
          std::string_view bp = b->encoded_path();
          std::string merged;
          if (b->has_authority() && bp.empty()) {
            merged = "/";
          } else {
            size_t slash = bp.rfind('/');
            merged = slash == std::string_view::npos
                         ? ""
                         : std::string(bp.substr(0, slash + 1));
          }
          merged += r->encoded_path();
          path = RemoveDotSegments(merged);
        }
        if (r->has_query()) query = r->encoded_query();
      }
      if (b->has_authority()) authority = b->encoded_authority();
    }
  }
  std::string out(scheme);
  out += ':';
  if (authority) {
    out += "//";
    out += *authority;
  }
  out += path;
  if (query) {
    out += '?';
    out += *query;
  }
  if (r->has_fragment()) {
    out += '#';
    out += r->encoded_fragment();
  }
  return UrlResult(std::move(out));
}

}  // namespace

UrlResolver::UrlResolver(std::string_view base) : base_(base) {
  auto parsed = urls::parse_uri(base_);
  if (!parsed) return;
  view_ = *parsed;
  UrlResult scheme = HttpScheme(view_);
  if (!scheme.ok()) return;
  scheme_ = scheme.value();
  UrlOptions keep_www, strip_www;
  strip_www.strip_www = true;
  UrlResult a = NormalizeOrigin(scheme_, view_, keep_www);
  UrlResult b = NormalizeOrigin(scheme_, view_, strip_www);
  if (!a.ok() || !b.ok()) return;
  origin_[0] = std::move(a.value());
  origin_[1] = std::move(b.value());
  ok_ = true;
}

UrlResult UrlResolver::Resolve(std::string_view href, const UrlOptions& options) const {
  if (!ok_) return UrlError("base: not a valid absolute http(s) URL '" + base_ + "'");
  std::string_view scheme = SchemeOf(href);
  if (!scheme.empty() && !IsSpecial(scheme)) {
    return Status::Error(Status::Code::kNotSupported,
                         "scheme '" + LowerAscii(scheme) + "' is not http or https");
  }
  std::string repaired = href::Repair(href::Clean(href, /*special=*/true), scheme_);
  std::string_view ref = repaired;
  auto r = urls::parse_uri_reference(ref);
  if (!r) return UrlError("not a valid URL reference (" + r.error().message() + ")");
  if (r->has_authority() && !r->encoded_path().empty() &&
      r->encoded_path().front() != '/') {
    return UrlError(Diagnose(
        r->has_scheme() ? ref : "http:" + std::string(ref),
        boost::system::errc::make_error_code(boost::system::errc::invalid_argument)));
  }
  // RFC 3986 5.2.2; dot segments are removed once, after percent
  // normalization (AppendPathQuery), which gives the same result.
  if (r->has_scheme() || r->has_authority()) {
    UrlResult s = r->has_scheme() ? HttpScheme(*r) : UrlResult(scheme_);
    if (!s.ok()) return s;
    UrlResult origin = NormalizeOrigin(s.value(), *r, options);
    if (!origin.ok()) return origin;
    return AppendPathQuery(std::move(origin.value()), r->encoded_path(), QueryOf(*r),
                           options);
  }
  const std::string& origin = origin_[options.strip_www ? 1 : 0];
  std::string_view ref_path = r->encoded_path();
  if (ref_path.empty()) {
    return AppendPathQuery(origin, view_.encoded_path(),
                           r->has_query() ? QueryOf(*r) : QueryOf(view_), options);
  }
  if (ref_path.front() == '/') {
    return AppendPathQuery(origin, ref_path, QueryOf(*r), options);
  }
  std::string_view bp = view_.encoded_path();
  std::string merged;
  size_t slash = bp.rfind('/');
  if (slash == std::string_view::npos) {
    merged = "/";  // the base has an authority and an empty path
  } else {
    merged.assign(bp.substr(0, slash + 1));
  }
  merged += ref_path;
  return AppendPathQuery(origin, merged, QueryOf(*r), options);
}

UrlResult ResolveHref(std::string_view base, std::string_view href,
                      const UrlOptions& options) {
  return UrlResolver(base).Resolve(href, options);
}

}  // namespace crawler::parsers
