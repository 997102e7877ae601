// See retry.h.
#include "engine/retry.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

namespace crawler::engine {

bool Transient(const FetchResult& r) {
  if (r.status == 0) {
    return r.error == FetchError::kConnect || r.error == FetchError::kTimeout ||
           r.error == FetchError::kProtocol;
  }
  return r.status == 408 || r.status == 429 || (r.status >= 500 && r.status <= 599);
}

frontier::HostSignal SignalOf(const FetchResult& r) {
  using frontier::HostSignal;
  if (r.status == 429 || r.status == 503) return HostSignal::kOverloaded;
  if (r.status > 0) return HostSignal::kAnswered;
  if (r.error == FetchError::kConnect) return HostSignal::kUnreachable;
  return HostSignal::kNone;
}

std::optional<double> RetryAfterSeconds(std::string_view head, std::time_t now) {
  std::optional<double> out;
  constexpr std::string_view kName = "retry-after:";
  size_t at = 0;
  while (at < head.size()) {
    size_t end = head.find('\n', at);
    if (end == std::string_view::npos) end = head.size();
    std::string_view line = head.substr(at, end - at);
    at = end + 1;
    if (line.size() < kName.size()) continue;
    bool match = true;
    for (size_t i = 0; i < kName.size() && match; ++i)
      match = std::tolower(static_cast<unsigned char>(line[i])) == kName[i];
    if (!match) continue;
    std::string value(line.substr(kName.size()));
    while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back())))
      value.pop_back();
    size_t first = value.find_first_not_of(" \t");
    value = first == std::string::npos ? "" : value.substr(first);
    if (value.empty()) continue;
    if (std::all_of(value.begin(), value.end(),
                    [](unsigned char c) { return std::isdigit(c) != 0; })) {
      out = value.size() > 9 ? 1e9 : std::stod(value);
      continue;
    }
    // An HTTP-date: libcurl's parser (RFC 1123, 850 and asctime forms).
    std::time_t t = curl_getdate(value.c_str(), nullptr);
    if (t != -1) out = std::max(0.0, std::difftime(t, now));
  }
  return out;
}

double BackoffSeconds(uint32_t attempt, double base, double cap, double jitter,
                      std::optional<double> retry_after) {
  double s = base * std::ldexp(1.0, static_cast<int>(std::min<uint32_t>(attempt, 30))) *
             (0.5 + jitter);
  if (retry_after) s = std::max(s, *retry_after);
  return std::min(s, cap);
}

}  // namespace crawler::engine
