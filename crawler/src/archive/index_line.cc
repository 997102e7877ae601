// See archive/index_line.h.
#include "archive/index_line.h"

#include <boost/json.hpp>

namespace crawler::archive {

namespace {

// Where the second space of `line` is (before its JSON), or npos.
size_t SecondSpace(std::string_view line) {
  const size_t sp1 = line.find(' ');
  return sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
}

}  // namespace

IndexLine ParseIndexLine(std::string_view line) {
  namespace json = boost::json;
  IndexLine out;
  const size_t sp1 = line.find(' '), sp2 = SecondSpace(line);
  if (sp2 == std::string_view::npos) return out;
  out.key = line.substr(0, sp1);
  out.ts = line.substr(sp1 + 1, sp2 - sp1 - 1);
  out.json_at = sp2 + 1;
  boost::system::error_code ec;
  const json::value v = json::parse(line.substr(sp2 + 1), ec);
  if (ec || !v.is_object()) return out;
  auto field = [&](const char* key) -> std::string {
    const json::value* f = v.as_object().if_contains(key);
    return f != nullptr && f->is_string() ? std::string(f->as_string()) : "";
  };
  out.url = field("url");
  out.mime = field("mime");
  out.status = field("status");
  out.digest = field("digest");
  out.ok = !out.url.empty() && !out.status.empty();
  return out;
}

bool SetIndexField(std::string* line, std::string_view name, std::string_view value) {
  namespace json = boost::json;
  const size_t sp2 = SecondSpace(*line);
  if (sp2 == std::string::npos) return false;
  const size_t json_at = sp2 + 1;
  boost::system::error_code ec;
  json::value v = json::parse(std::string_view(*line).substr(json_at), ec);
  if (ec || !v.is_object()) return false;
  v.as_object()[name] = value;
  line->replace(json_at, std::string::npos, json::serialize(v));
  return true;
}

}  // namespace crawler::archive
