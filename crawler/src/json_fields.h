// Lenient field readers for the crawler's own JSON (MANIFEST.json, stats.json):
// a missing or mistyped field reads as zero / empty. Strict checks, where a
// file must be exactly right, are done by the caller (checkpoint.cc verifies
// checksums first).
#ifndef CRAWLER_JSON_FIELDS_H_
#define CRAWLER_JSON_FIELDS_H_

#include <algorithm>
#include <boost/json.hpp>
#include <cstdint>
#include <string>

namespace crawler::engine::json_fields {

namespace json = boost::json;

inline const json::object& Obj(const json::object& o, const char* key) {
  static const json::object kEmpty;
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_object() ? v->as_object() : kEmpty;
}

inline const json::array& Arr(const json::object& o, const char* key) {
  static const json::array kEmpty;
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_array() ? v->as_array() : kEmpty;
}

// Any JSON number as a double.
inline double Num(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return 0;
  if (v->is_double()) return v->as_double();
  if (v->is_int64()) return static_cast<double>(v->as_int64());
  if (v->is_uint64()) return static_cast<double>(v->as_uint64());
  return 0;
}

// An integer count (negative reads as 0).
inline uint64_t Count(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return 0;
  if (v->is_uint64()) return v->as_uint64();
  if (v->is_int64()) return static_cast<uint64_t>(std::max<int64_t>(0, v->as_int64()));
  return 0;
}

inline std::string Str(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

}  // namespace crawler::engine::json_fields

#endif  // CRAWLER_JSON_FIELDS_H_
