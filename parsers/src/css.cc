// The CSS URL tokenizer; see parsers/css.h. Section numbers are CSS Syntax
// Level 3's.
#include "parsers/css.h"

#include <cstdint>

#include "ascii.h"

namespace crawler::parsers {
namespace {

bool IsNewline(char c) { return c == '\n' || c == '\r' || c == '\f'; }
bool IsWhitespace(char c) { return c == ' ' || c == '\t' || IsNewline(c); }
// 4.2: a name-start code point (non-ASCII counts).
bool IsNameStart(char c) {
  return ascii::IsAlpha(c) || c == '_' || static_cast<unsigned char>(c) >= 0x80;
}
bool IsName(char c) { return IsNameStart(c) || ascii::IsDigit(c) || c == '-'; }
bool IsNonPrintable(char c) {
  auto u = static_cast<unsigned char>(c);
  return u <= 0x08 || u == 0x0B || (u >= 0x0E && u <= 0x1F) || u == 0x7F;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Tokenizer {
 public:
  explicit Tokenizer(std::string_view css) : s_(css) {}

  std::vector<std::string> Run() {
    while (i_ < s_.size()) Next();
    return std::move(urls_);
  }

 private:
  char At(size_t k) const { return i_ + k < s_.size() ? s_[i_ + k] : '\0'; }
  bool More(size_t k = 0) const { return i_ + k < s_.size(); }

  // 4.3.8: a backslash that starts a valid escape (not before a newline).
  bool ValidEscape(size_t k) const {
    return At(k) == '\\' && More(k + 1) && !IsNewline(At(k + 1));
  }
  // 4.3.9: an ident sequence starts at k.
  bool IdentStart(size_t k) const {
    char c = At(k);
    if (c == '-') return IsNameStart(At(k + 1)) || At(k + 1) == '-' || ValidEscape(k + 1);
    return (More(k) && IsNameStart(c)) || ValidEscape(k);
  }

  // 4.3.7, at the code point after the backslash.
  void ConsumeEscape(std::string* out) {
    if (!More()) {
      AppendUtf8(0xFFFD, out);
      return;
    }
    if (ascii::IsHex(At(0))) {
      uint32_t cp = 0;
      for (int n = 0; n < 6 && More() && ascii::IsHex(At(0)); ++n, ++i_)
        cp = cp * 16 + static_cast<uint32_t>(ascii::HexValue(At(0)));
      if (At(0) == '\r' && At(1) == '\n') {
        i_ += 2;
      } else if (More() && IsWhitespace(At(0))) {
        ++i_;
      }
      AppendUtf8(cp, out);
      return;
    }
    *out += s_[i_++];
  }

  // 4.3.11.
  std::string ConsumeName() {
    std::string name;
    while (More()) {
      if (IsName(At(0))) {
        name += s_[i_++];
      } else if (ValidEscape(0)) {
        ++i_;
        ConsumeEscape(&name);
      } else {
        break;
      }
    }
    return name;
  }

  // 4.3.5, after the opening quote. Returns false for a bad string.
  bool ConsumeString(char quote, std::string* out) {
    while (More()) {
      char c = s_[i_];
      if (c == quote) {
        ++i_;
        return true;
      }
      if (IsNewline(c)) return false;  // reconsumed as whitespace
      ++i_;
      if (c != '\\') {
        *out += c;
      } else if (!More()) {
        return true;
      } else if (IsNewline(At(0))) {
        i_ += At(0) == '\r' && At(1) == '\n' ? 2 : 1;  // a line continuation
      } else {
        ConsumeEscape(out);
      }
    }
    return true;  // EOF ends it (a parse error, still a string)
  }

  void SkipWhitespace() {
    while (More() && IsWhitespace(At(0))) ++i_;
  }

  // 4.3.6, after "url(" and its whitespace.
  void ConsumeUrl() {
    std::string url;
    while (More()) {
      char c = s_[i_++];
      if (c == ')') break;
      if (IsWhitespace(c)) {
        SkipWhitespace();
        if (!More() || At(0) == ')') {
          if (More()) ++i_;
          break;
        }
        return SkipBadUrl();
      }
      if (c == '"' || c == '\'' || c == '(' || IsNonPrintable(c)) return SkipBadUrl();
      if (c == '\\') {
        if (!More() || IsNewline(At(0))) return SkipBadUrl();
        ConsumeEscape(&url);
        continue;
      }
      url += c;
    }
    Found(std::move(url));
  }

  // 4.3.14: the rest of a bad url, to its ')' (escapes skipped over).
  void SkipBadUrl() {
    while (More()) {
      char c = s_[i_++];
      if (c == ')') return;
      if (c == '\\' && More()) ++i_;
    }
  }

  void Found(std::string url) {
    if (!url.empty()) urls_.push_back(std::move(url));
  }

  // An ident-like token (4.3.4): a function opens a level; url( is a URL.
  void IdentLike() {
    std::string name = ascii::LowerAscii(ConsumeName());
    if (At(0) != '(') return;
    ++i_;
    if (name == "url") {
      SkipWhitespace();
      if (At(0) != '"' && At(0) != '\'') return ConsumeUrl();
      // url( with a string: a function, its string the URL.
      url_strings_.push_back(true);
      return;
    }
    // src("..."), and the strings of image-set() (CSS Images 4).
    url_strings_.push_back(name == "src" || name == "image-set" ||
                           name == "-webkit-image-set");
  }

  void Next() {
    char c = s_[i_];
    if (c == '/' && At(1) == '*') {  // 4.3.2
      size_t end = s_.find("*/", i_ + 2);
      i_ = end == std::string_view::npos ? s_.size() : end + 2;
    } else if (c == '"' || c == '\'') {
      ++i_;
      std::string str;
      bool ok = ConsumeString(c, &str);
      if (ok && (import_ || (!url_strings_.empty() && url_strings_.back())))
        Found(std::move(str));
      import_ = false;
    } else if (c == '@' && IdentStart(1)) {
      ++i_;
      import_ = ascii::LowerAscii(ConsumeName()) == "import";
    } else if (IdentStart(0)) {
      import_ = false;
      IdentLike();
    } else if (c == '\\') {  // a backslash that starts no escape: a delim
      ++i_;
    } else if (c == '(' || c == '[' || c == '{') {
      ++i_;
      url_strings_.push_back(false);
      import_ = false;
    } else if (c == ')' || c == ']' || c == '}') {
      ++i_;
      if (!url_strings_.empty()) url_strings_.pop_back();
      import_ = false;
    } else {
      ++i_;
      if (!IsWhitespace(c)) import_ = false;
    }
  }

  std::string_view s_;
  size_t i_ = 0;
  // Per open block or function, innermost last: are its strings URLs?
  std::vector<bool> url_strings_;
  bool import_ = false;  // after "@import" (and whitespace)
  std::vector<std::string> urls_;
};

}  // namespace

std::vector<std::string> CssUrls(std::string_view css) { return Tokenizer(css).Run(); }

}  // namespace crawler::parsers
