// What a rendered page's requests carry through the DevTools Fetch domain:
// the patterns that pause them (documents at the request, to answer the
// page's own from the crawl's fetch; every response, to read its headers
// and body), and the conversions between DevTools' forms and ours (header
// lists, base64 bodies). OpenSSL's EVP_EncodeBlock/DecodeBlock do the
// base64 (linked already for the WACZ's SHA-256).
#ifndef CRAWLER_BROWSER_CAPTURE_H_
#define CRAWLER_BROWSER_CAPTURE_H_

#include <boost/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "browser/renderer.h"

namespace crawler::browser {

// Fetch.enable's patterns.
json::array PausePatterns();

std::string Base64(std::string_view bytes);
// nullopt: not base64.
std::optional<std::string> FromBase64(std::string_view text);

// {"Name": "value", ...} (the Network and Fetch requests' headers).
Headers HeadersOfObject(const json::object& o);
// [{"name": ..., "value": ...}, ...] (Fetch's response headers), and back.
Headers HeadersOfEntries(const json::value& v);
json::array EntriesOf(const Headers& headers);

// The crawl's document as Fetch.fulfillRequest's parameters: its headers
// without those that describe the bytes on the wire (the body given is
// decoded and whole).
json::object FulfillParams(const std::string& request_id, const Document& d);

}  // namespace crawler::browser

#endif  // CRAWLER_BROWSER_CAPTURE_H_
