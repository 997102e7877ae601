// Small ASCII and percent-encoding helpers shared by the parsers (private).
// Locale-independent on purpose: URLs, robots.txt and HTML attribute names
// are ASCII protocols. Pure functions; any thread.
#ifndef PARSERS_ASCII_H_
#define PARSERS_ASCII_H_

#include <string>
#include <string_view>

namespace crawler::parsers::ascii {

inline bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsHex(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
inline char Lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}
inline int HexValue(char c) { return IsDigit(c) ? c - '0' : Lower(c) - 'a' + 10; }
// RFC 3986 2.3.
inline bool IsUnreserved(unsigned char c) {
  return IsAlpha(static_cast<char>(c)) || IsDigit(static_cast<char>(c)) || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

inline std::string LowerAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = Lower(c);
  return out;
}

// Percent-encoding normalization (RFC 3986 6.2.2.2): escapes of unreserved
// characters are decoded, the hex digits of the others uppercased. With
// `encode_raw`, bytes that may not appear raw (controls, space, DEL,
// non-ASCII) are percent-encoded too (RFC 9309 2.2.2 wants that for paths).
inline std::string NormalizePercent(std::string_view s, bool encode_raw = false) {
  static constexpr char kHexDigits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == '%' && i + 2 < s.size() && IsHex(s[i + 1]) && IsHex(s[i + 2])) {
      auto decoded =
          static_cast<unsigned char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2]));
      if (IsUnreserved(decoded)) {
        out += static_cast<char>(decoded);
      } else {
        out += '%';
        out += kHexDigits[decoded >> 4];
        out += kHexDigits[decoded & 15];
      }
      i += 2;
    } else if (encode_raw && (c <= 0x20 || c >= 0x7F)) {
      out += '%';
      out += kHexDigits[c >> 4];
      out += kHexDigits[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace crawler::parsers::ascii

#endif  // PARSERS_ASCII_H_
