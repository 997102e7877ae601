// Percent-encoding helpers shared by the parsers (private); the ASCII
// basics are base/ascii.h's, named here for the parsers' code.
// Locale-independent on purpose: URLs, robots.txt and HTML attribute names
// are ASCII protocols. Pure functions; any thread.
#ifndef PARSERS_ASCII_H_
#define PARSERS_ASCII_H_

#include <string>
#include <string_view>

#include "base/ascii.h"

namespace crawler::parsers::ascii {

using crawler::ascii::HexValue;
using crawler::ascii::IsAlpha;
using crawler::ascii::IsDigit;
using crawler::ascii::IsHex;
using crawler::ascii::Lower;
using crawler::ascii::LowerAscii;

// RFC 3986 2.3.
inline bool IsUnreserved(unsigned char c) {
  return IsAlpha(static_cast<char>(c)) || IsDigit(static_cast<char>(c)) || c == '-' ||
         c == '.' || c == '_' || c == '~';
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
