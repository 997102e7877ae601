// See href.h.
#include "href.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ascii.h"

namespace crawler::parsers::href {

using ascii::IsAlpha;
using ascii::IsDigit;
using ascii::IsHex;
using ascii::Lower;

using crawler::ascii::EqualsIgnoreCase;

std::string_view SchemeOf(std::string_view s) {
  if (s.empty() || !IsAlpha(s[0])) return {};
  for (size_t i = 1; i < s.size(); ++i) {
    char c = s[i];
    if (c == ':') return s.substr(0, i);
    if (!IsAlpha(c) && !IsDigit(c) && c != '+' && c != '-' && c != '.') return {};
  }
  return {};
}

bool IsSpecial(std::string_view scheme) {
  return EqualsIgnoreCase(scheme, "http") || EqualsIgnoreCase(scheme, "https");
}

namespace {

// A special URL's authority in the text being cleaned (positions in it), as
// WHATWG reads it: the userinfo ends at the last '@' (an earlier '@' is
// part of it, "%40"), and a trailing '.' after a numeric last label ends an
// IPv4 host ("1.2.3.4." is 1.2.3.4).
struct Authority {
  size_t begin = 0, at = std::string_view::npos;  // at: the last '@'
  size_t first_colon = std::string_view::npos;    // in the userinfo
  size_t dropped_dot = std::string_view::npos;

  // Whether the userinfo's `c` at `i` is percent-encoded (WHATWG's userinfo
  // percent-encode set, beyond what Clean encodes anywhere; the first ':'
  // separates user and password).
  bool Encodes(size_t i, char c) const {
    if (at == std::string_view::npos || i < begin || i >= at) return false;
    return c == '@' || c == '[' || c == ']' || c == ';' || c == '=' ||
           (c == ':' && i != first_colon);
  }
};

bool NumericLabel(std::string_view label) {
  if (label.size() > 2 && label[0] == '0' && Lower(label[1]) == 'x')
    return std::all_of(label.begin() + 2, label.end(), IsHex);
  return !label.empty() && std::all_of(label.begin(), label.end(), IsDigit);
}

Authority SplitAuthority(std::string_view in, size_t begin, size_t end) {
  Authority a;
  a.begin = begin;
  std::string_view text = in.substr(begin, end - begin);
  size_t at = text.rfind('@');
  size_t host_begin = begin;
  if (at != std::string_view::npos) {
    a.at = begin + at;
    size_t colon = text.find(':');
    if (colon < at) a.first_colon = begin + colon;
    host_begin = a.at + 1;
  }
  std::string_view host = in.substr(host_begin, end - host_begin);
  if (host.starts_with('[')) return a;     // IPv6
  host = host.substr(0, host.rfind(':'));  // without the port
  if (host.size() > 1 && host.back() == '.') {
    std::string_view rest = host.substr(0, host.size() - 1);
    size_t dot = rest.rfind('.');
    if (NumericLabel(dot == std::string_view::npos ? rest : rest.substr(dot + 1)))
      a.dropped_dot = host_begin + host.size() - 1;
  }
  return a;
}

}  // namespace

std::string WithoutTabsOrNewlines(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (char c : in)
    if (c != '\t' && c != '\n' && c != '\r') out += c;
  return out;
}

std::string Clean(std::string_view raw, bool special) {
  const std::string no_tabs = WithoutTabsOrNewlines(raw);
  std::string_view in = no_tabs;
  size_t begin = 0, end = in.size();
  while (begin < end && static_cast<unsigned char>(in[begin]) <= 0x20) ++begin;
  while (end > begin && static_cast<unsigned char>(in[end - 1]) <= 0x20) --end;
  in = in.substr(begin, end - begin);

  static constexpr char kHexDigits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(in.size() + 8);
  bool in_query = false;
  // Where the authority ends (square brackets are legal only inside it).
  size_t authority_end = std::string_view::npos;
  Authority auth;
  {
    size_t start = 0;
    std::string_view scheme = SchemeOf(in);
    if (!scheme.empty()) start = scheme.size() + 1;
    if (in.substr(start, 2) == "//" || (special && in.substr(start, 2) == "\\\\")) {
      authority_end = in.find_first_of("/\\?#", start + 2);
      if (authority_end == std::string_view::npos) authority_end = in.size();
      if (special) auth = SplitAuthority(in, start + 2, authority_end);
    }
  }
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    auto u = static_cast<unsigned char>(c);
    if (c == '#') break;  // the fragment never reaches a server or the dedup key
    if (c == '?') in_query = true;
    if (c == '\\' && special && !in_query) c = '/';
    if (i == auth.dropped_dot) continue;
    // A "%" that starts no escape: a browser keeps it and sends it as is;
    // the server reads it as a "%", which is "%25" in RFC 3986 (as wget).
    bool stray_percent =
        c == '%' && (i + 2 >= in.size() || !IsHex(in[i + 1]) || !IsHex(in[i + 2]));
    bool bracket_outside_host =
        (c == '[' || c == ']') &&
        (authority_end == std::string_view::npos || i >= authority_end);
    if (u <= 0x20 || u >= 0x7F || c == '"' || c == '<' || c == '>' || c == '`' ||
        c == '{' || c == '}' || c == '|' || c == '^' || c == '\\' ||
        bracket_outside_host || stray_percent || auth.Encodes(i, c) ||
        (c == '\'' && special && in_query)) {
      out += '%';
      out += kHexDigits[u >> 4];
      out += kHexDigits[u & 15];
      continue;
    }
    out += c;
  }
  return out;
}

namespace {

// `s` without its leading slashes.
std::string_view NoLeadingSlashes(std::string_view s) {
  size_t k = s.find_first_not_of('/');
  return s.substr(k == std::string_view::npos ? s.size() : k);
}

// A reference without scheme or authority; a ':' in its first segment
// makes it a path, not a scheme (RFC 3986 4.2 wants "./" before it).
std::string RelativePath(std::string_view ref) {
  size_t colon = ref.find(':');
  if (colon != std::string_view::npos && colon < ref.find_first_of("/?"))
    return "./" + std::string(ref);
  return std::string(ref);
}

}  // namespace

std::string Repair(std::string_view ref, std::string_view base_scheme) {
  std::string_view scheme = SchemeOf(ref);
  if (!scheme.empty()) {
    if (!IsSpecial(scheme)) return std::string(ref);
    std::string_view rest = ref.substr(scheme.size() + 1);
    // The base's own scheme without "//": a relative reference.
    if (EqualsIgnoreCase(scheme, base_scheme) && !rest.starts_with("//"))
      return RelativePath(rest);
    // Otherwise an authority follows, however many slashes (0 to n) precede it.
    return std::string(scheme) + "://" + std::string(NoLeadingSlashes(rest));
  }
  if (ref.starts_with("//")) return "//" + std::string(NoLeadingSlashes(ref));
  return RelativePath(ref);
}

namespace {

// An IPv4 part: decimal, "0x" hex or "0" octal; nullopt if malformed.
std::optional<uint64_t> Ipv4Number(std::string_view part) {
  if (part.empty()) return std::nullopt;
  unsigned radix = 10;
  if (part.size() >= 2 && part[0] == '0' && part[1] == 'x') {
    radix = 16;
    part.remove_prefix(2);
  } else if (part.size() >= 2 && part[0] == '0') {
    radix = 8;
    part.remove_prefix(1);
  }
  uint64_t n = 0;
  for (char c : part) {
    unsigned d = IsDigit(c)               ? static_cast<unsigned>(c - '0')
                 : (c >= 'a' && c <= 'f') ? static_cast<unsigned>(c - 'a' + 10)
                                          : 99;
    if (d >= radix) return std::nullopt;
    // Saturates above 2^32: still a number (too large for any part).
    n = std::min<uint64_t>(n * radix + d, (uint64_t{1} << 32) + 1);
  }
  return n;
}

}  // namespace

std::optional<Result<std::string>> ParseIpv4(std::string_view host) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    size_t dot = host.find('.', start);
    parts.push_back(
        host.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (parts.size() > 1 && parts.back().empty()) parts.pop_back();
  std::string_view last = parts.back();
  bool ends_in_number =
      !last.empty() &&
      (std::all_of(last.begin(), last.end(), IsDigit) || Ipv4Number(last).has_value());
  if (!ends_in_number) return std::nullopt;
  auto fail = [&host](const char* why) {
    return Result<std::string>(
        Status::Error(Status::Code::kInvalidArgument,
                      "bad IPv4 host '" + std::string(host) + "' (" + why + ")"));
  };
  if (parts.size() > 4) return fail("more than 4 parts");
  std::vector<uint64_t> numbers;
  for (std::string_view part : parts) {
    std::optional<uint64_t> n = Ipv4Number(part);
    if (!n) return fail("a part is not a number");
    numbers.push_back(*n);
  }
  for (size_t i = 0; i + 1 < numbers.size(); ++i)
    if (numbers[i] > 255) return fail("a part above 255");
  if (numbers.back() >= (uint64_t{1} << (8 * (5 - numbers.size()))))
    return fail("the last part is too large");
  uint64_t address = numbers.back();
  for (size_t i = 0; i + 1 < numbers.size(); ++i) address += numbers[i] << (8 * (3 - i));
  return Result<std::string>(
      std::to_string(address >> 24) + "." + std::to_string((address >> 16) & 255) + "." +
      std::to_string((address >> 8) & 255) + "." + std::to_string(address & 255));
}

std::string CanonicalIpv6(std::string_view bracketed) {
  std::string inner(bracketed.substr(1, bracketed.size() - 2));
  unsigned char bytes[16];
  if (::inet_pton(AF_INET6, inner.c_str(), bytes) != 1)
    return ascii::LowerAscii(bracketed);
  uint16_t piece[8];
  for (int i = 0; i < 8; ++i)
    piece[i] = static_cast<uint16_t>(bytes[2 * i] << 8 | bytes[2 * i + 1]);
  int best = -1, best_len = 1;
  for (int i = 0; i < 8;) {
    int j = i;
    while (j < 8 && piece[j] == 0) ++j;
    if (j - i > best_len) {
      best = i;
      best_len = j - i;
    }
    i = j == i ? i + 1 : j;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "[";
  for (int i = 0; i < 8; ++i) {
    if (i == best) {
      out += i == 0 ? "::" : ":";
      i += best_len - 1;
      continue;
    }
    bool lead = true;
    for (int shift = 12; shift >= 0; shift -= 4) {
      unsigned d = (piece[i] >> shift) & 15;
      if (lead && d == 0 && shift > 0) continue;
      lead = false;
      out += kHex[d];
    }
    if (i < 7) out += ':';
  }
  out += ']';
  return out;
}

}  // namespace crawler::parsers::href
