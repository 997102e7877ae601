#include "browser/capture.h"

#include <openssl/evp.h>
#include <strings.h>

#include <vector>

namespace crawler::browser {

json::array PausePatterns() {
  return json::array{
      json::object{
          {"urlPattern", "*"}, {"resourceType", "Document"}, {"requestStage", "Request"}},
      json::object{{"urlPattern", "*"}, {"requestStage", "Response"}},
  };
}

std::string Base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::optional<std::string> FromBase64(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out(3 * (text.size() / 4) + 1, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  size_t size = static_cast<size_t>(n);
  // DecodeBlock counts the padding's zero bytes in.
  for (size_t i = text.size(); i > 0 && text[i - 1] == '=' && size > 0; --i) --size;
  out.resize(size);
  return out;
}

Headers HeadersOfObject(const json::object& o) {
  Headers h;
  for (const auto& [name, value] : o) {
    if (value.is_string())
      h.emplace_back(std::string(name), std::string(value.get_string()));
  }
  return h;
}

Headers HeadersOfEntries(const json::value& v) {
  Headers h;
  if (!v.is_array()) return h;
  for (const json::value& e : v.get_array()) {
    if (!e.is_object()) continue;
    const json::value* name = e.get_object().if_contains("name");
    const json::value* value = e.get_object().if_contains("value");
    if (name && value && name->is_string() && value->is_string()) {
      h.emplace_back(std::string(name->get_string()), std::string(value->get_string()));
    }
  }
  return h;
}

json::array EntriesOf(const Headers& headers) {
  json::array a;
  for (const auto& [name, value] : headers) {
    a.push_back(json::object{{"name", name}, {"value", value}});
  }
  return a;
}

json::object FulfillParams(const std::string& request_id, const Document& d) {
  Headers kept;
  for (const auto& [name, value] : d.headers) {
    if (strcasecmp(name.c_str(), "Content-Encoding") == 0 ||
        strcasecmp(name.c_str(), "Content-Length") == 0 ||
        strcasecmp(name.c_str(), "Transfer-Encoding") == 0) {
      continue;
    }
    kept.emplace_back(name, value);
  }
  return json::object{{"requestId", request_id},
                      {"responseCode", d.status},
                      {"responseHeaders", EntriesOf(kept)},
                      {"body", Base64(d.body)}};
}

}  // namespace crawler::browser
