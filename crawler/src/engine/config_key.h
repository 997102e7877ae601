// The config schema's building blocks (crawler/config.h): one Key per
// "section.key", with how to apply a TOML value (returns "" or the problem)
// and how to print the current value as TOML. config.cc holds the schema's
// core sections; config_keys.cc the [cluster], [metrics] and [recrawl] ones.
#ifndef CRAWLER_SRC_ENGINE_CONFIG_KEY_H_
#define CRAWLER_SRC_ENGINE_CONFIG_KEY_H_

#include <toml++/toml.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "crawler/config.h"

namespace crawler::engine::config_key {

// One config key: how to apply a TOML value (returns "" or the problem) and
// how to print the current value as TOML.
struct Key {
  std::string section, name;
  std::function<std::string(Config&, const toml::node&)> apply;
  std::function<std::string(const Config&)> dump;
  std::string path() const { return section + "." + name; }
};

template <typename Int, typename Ref>
Key IntKey(const char* section, const char* name, Ref ref, int64_t lo, int64_t hi) {
  return Key{
      section, name,
      [=](Config& c, const toml::node& n) -> std::string {
        if (!n.is_integer()) return "expected an integer";
        int64_t v = *n.value<int64_t>();
        if (v < lo || v > hi) {
          return "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                 "], got " + std::to_string(v);
        }
        ref(c) = static_cast<Int>(v);
        return "";
      },
      [=](const Config& c) { return std::to_string(ref(const_cast<Config&>(c))); }};
}

template <typename Ref>
Key DoubleKey(const char* section, const char* name, Ref ref, double lo, double hi,
              bool open_low = false) {
  return Key{section, name,
             [=](Config& c, const toml::node& n) -> std::string {
               if (!n.is_number()) return "expected a number";
               double v = n.is_integer() ? static_cast<double>(*n.value<int64_t>())
                                         : *n.value<double>();
               if (!(v >= lo && v <= hi) || (open_low && v == lo)) {
                 std::ostringstream m;
                 m << "must be in " << (open_low ? "(" : "[") << lo << ", " << hi
                   << "], got " << v;
                 return m.str();
               }
               ref(c) = v;
               return "";
             },
             [=](const Config& c) {
               std::ostringstream m;
               m << ref(const_cast<Config&>(c));
               std::string s = m.str();
               if (s.find_first_of(".e") == std::string::npos) s += ".0";
               return s;
             }};
}

template <typename Ref>
Key BoolKey(const char* section, const char* name, Ref ref) {
  return Key{section, name,
             [=](Config& c, const toml::node& n) -> std::string {
               if (!n.is_boolean()) return "expected true or false";
               ref(c) = *n.value<bool>();
               return "";
             },
             [=](const Config& c) {
               return std::string(ref(const_cast<Config&>(c)) ? "true" : "false");
             }};
}

// "HOST:PORT": a host before the last colon, a port of digits in
// [min_port, 65535] after it.
inline bool IsHostPort(const std::string& v, unsigned long min_port) {
  const size_t colon = v.rfind(':');
  if (colon == 0 || colon == std::string::npos) return false;
  const std::string port = v.substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos)
    return false;
  const unsigned long p = std::stoul(port);
  return p >= min_port && p <= 65535;
}

inline std::string Quote(const std::string& s) {
  std::ostringstream m;
  m << toml::value<std::string>(s);
  return m.str();
}

template <typename Ref>
Key StringKey(const char* section, const char* name, Ref ref,
              const std::function<std::string(const std::string&)>& check = nullptr) {
  return Key{section, name,
             [=](Config& c, const toml::node& n) -> std::string {
               if (!n.is_string()) return "expected a string";
               std::string v = *n.value<std::string>();
               if (check) {
                 std::string problem = check(v);
                 if (!problem.empty()) return problem;
               }
               ref(c) = v;
               return "";
             },
             [=](const Config& c) { return Quote(ref(const_cast<Config&>(c))); }};
}

template <typename Ref>
Key StringListKey(const char* section, const char* name, Ref ref, bool regexes) {
  return Key{section, name,
             [=](Config& c, const toml::node& n) -> std::string {
               const toml::array* a = n.as_array();
               if (a == nullptr) return "expected an array of strings";
               std::vector<std::string> out;
               for (const toml::node& e : *a) {
                 if (!e.is_string()) return "expected an array of strings";
                 out.push_back(*e.value<std::string>());
                 if (regexes) {
                   try {
                     std::regex re(out.back());
                   } catch (const std::regex_error& err) {
                     return "invalid regex '" + out.back() + "': " + err.what();
                   }
                 }
               }
               ref(c) = std::move(out);
               return "";
             },
             [=](const Config& c) {
               std::string s = "[";
               for (const std::string& v : ref(const_cast<Config&>(c))) {
                 if (s.size() > 1) s += ", ";
                 s += Quote(v);
               }
               return s + "]";
             }};
}

constexpr int64_t kMax32 = std::numeric_limits<uint32_t>::max();
constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();

std::vector<Key> ClusterKeys();
std::vector<Key> MetricsKeys();
std::vector<Key> RecrawlKeys();
std::vector<Key> BrowserKeys();

}  // namespace crawler::engine::config_key

#endif  // CRAWLER_SRC_ENGINE_CONFIG_KEY_H_
