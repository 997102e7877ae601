// ASCII character tests, lowercasing, case-insensitive comparison and
// trimming: the one copy every library uses. Locale-independent on purpose:
// URLs, HTTP headers, robots.txt, sitemaps and HTML attribute names are ASCII
// protocols, and std::tolower/isspace follow the C locale's tables.
// Pure functions; any thread.
#ifndef CRAWLER_BASE_ASCII_H_
#define CRAWLER_BASE_ASCII_H_

#include <string>
#include <string_view>

namespace crawler::ascii {

// What Trim removes by default: HTTP's optional whitespace (RFC 9110 5.6.3).
inline constexpr std::string_view kSpaceTab = " \t";
// HTML's ASCII whitespace (WHATWG Infra) plus nothing else.
inline constexpr std::string_view kWhitespace = " \t\n\r\f";

inline bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsHex(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
inline char Lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}
// The value of a hex digit (IsHex(c) must hold).
inline int HexValue(char c) { return IsDigit(c) ? c - '0' : Lower(c) - 'a' + 10; }

inline std::string LowerAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = Lower(c);
  return out;
}

inline bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

inline bool StartsWithIgnoreCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() &&
         EqualsIgnoreCase(s.substr(0, prefix.size()), prefix);
}

// `s` without the characters of `chars` at either end.
inline std::string_view Trim(std::string_view s, std::string_view chars = kSpaceTab) {
  size_t b = s.find_first_not_of(chars);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(chars) - b + 1);
}

}  // namespace crawler::ascii

#endif  // CRAWLER_BASE_ASCII_H_
