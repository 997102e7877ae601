// Typed JSON for the crawler's own files (MANIFEST.json, stats.json,
// stats-series.jsonl). Each schema is a struct described with
// BOOST_DESCRIBE_STRUCT (stats_schema.h): boost::json::value_from writes it,
// ReadLenient reads it back. Reading is lenient: a missing or mistyped member
// keeps its default, so a report written by another version still shows what
// it has. Strict checks, where a file must be exactly right, are the caller's
// (checkpoint.cc verifies the manifest's checksum and required parts first).
#ifndef CRAWLER_JSON_FIELDS_H_
#define CRAWLER_JSON_FIELDS_H_

#include <boost/describe.hpp>
#include <boost/json.hpp>
#include <boost/mp11/algorithm.hpp>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

namespace crawler::output::json_fields {

namespace json = boost::json;

// Each reader returns whether `v` had the right type (else `out` is unchanged).
inline bool ReadLenient(const json::value& v, bool& out) {
  if (!v.is_bool()) return false;
  out = v.as_bool();
  return true;
}
inline bool ReadLenient(const json::value& v, std::string& out) {
  if (!v.is_string()) return false;
  out = std::string(v.as_string());
  return true;
}
inline bool ReadLenient(const json::value& v, json::object& out) {
  if (!v.is_object()) return false;
  out = v.as_object();
  return true;
}
// Any JSON number as a double.
inline bool ReadLenient(const json::value& v, double& out) {
  if (v.is_double())
    out = v.as_double();
  else if (v.is_int64())
    out = static_cast<double>(v.as_int64());
  else if (v.is_uint64())
    out = static_cast<double>(v.as_uint64());
  else
    return false;
  return true;
}
// Counts: a negative, fractional or out-of-range value is ignored (found by
// checkpoint_fuzz: to_number threw "not exact" and terminated a resume).
template <class T>
requires(std::is_integral_v<T>&& std::is_unsigned_v<T> &&
         !std::is_same_v<T, bool>) bool ReadLenient(const json::value& v, T& out) {
  uint64_t n = 0;
  if (v.is_uint64()) {
    n = v.as_uint64();
  } else if (v.is_int64() && v.as_int64() >= 0) {
    n = static_cast<uint64_t>(v.as_int64());
  } else {
    return false;
  }
  if (n > std::numeric_limits<T>::max()) return false;
  out = static_cast<T>(n);
  return true;
}
template <class T>
bool ReadLenient(const json::value& v, std::vector<T>& out);
template <class T>
bool ReadLenient(const json::value& v, std::map<std::string, T>& out);
template <class T>
requires boost::describe::has_describe_members<T>::value bool ReadLenient(
    const json::value& v, T& out);

// Elements of the wrong type are left out.
template <class T>
bool ReadLenient(const json::value& v, std::vector<T>& out) {
  if (!v.is_array()) return false;
  out.clear();
  for (const json::value& e : v.as_array()) {
    T item{};
    if (ReadLenient(e, item)) out.push_back(std::move(item));
  }
  return true;
}
template <class T>
bool ReadLenient(const json::value& v, std::map<std::string, T>& out) {
  if (!v.is_object()) return false;
  for (const auto& [key, e] : v.as_object()) {
    T item{};
    if (ReadLenient(e, item)) out[std::string(key)] = std::move(item);
  }
  return true;
}
// A described struct: each public member from the key of its name.
template <class T>
requires boost::describe::has_describe_members<T>::value bool ReadLenient(
    const json::value& v, T& out) {
  if (!v.is_object()) return false;
  const json::object& o = v.as_object();
  using Members = boost::describe::describe_members<T, boost::describe::mod_public>;
  boost::mp11::mp_for_each<Members>([&](auto d) {
    if (const json::value* m = o.if_contains(d.name)) ReadLenient(*m, out.*d.pointer);
  });
  return true;
}

template <class T>
T ReadLenient(const json::value& v) {
  T out{};
  ReadLenient(v, out);
  return out;
}

// value_from(parts) merged into one flat object (a JSON object whose keys come
// from two structs, like the manifest's "counters").
template <class... Parts>
json::object Flat(const Parts&... parts) {
  json::object out;
  auto add = [&out](const auto& part) {
    json::value v = json::value_from(part);
    for (auto& [key, value] : v.as_object()) out[key] = std::move(value);
  };
  (add(parts), ...);
  return out;
}

}  // namespace crawler::output::json_fields

#endif  // CRAWLER_JSON_FIELDS_H_
