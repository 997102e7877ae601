// Secrets kept out of logs, error messages, files under OUT and argv. The
// Redis password is the one the crawler knows: it comes from the
// environment (kRedisPasswordEnv), never from a URL, so no config file,
// checkpoint or command line holds it (docs/cluster.md, "Password").
#ifndef BASE_SECRET_H_
#define BASE_SECRET_H_

#include <string>

namespace crawler {

inline constexpr const char* kRedisPasswordEnv = "CRAWLER_REDIS_PASSWORD";

// `text` with the userinfo of each URL in it ("scheme://USER:PASS@host")
// replaced by "***", for messages that quote what the user gave.
inline std::string WithoutUserinfo(std::string text) {
  for (size_t s = text.find("://"); s != std::string::npos; s = text.find("://", s + 3)) {
    const size_t start = s + 3;
    size_t end = text.find_first_of("/ \t\r\n\"'", start);
    if (end == std::string::npos) end = text.size();
    if (end == start) continue;
    size_t at = text.rfind('@', end - 1);
    if (at == std::string::npos || at < start) continue;
    text.replace(start, at - start, "***");
  }
  return text;
}

}  // namespace crawler

#endif  // BASE_SECRET_H_
