// Scrapes a running crawler's /metrics for a test: the URL from the log line
// "metrics: serving http://HOST:PORT/metrics" (the tests listen on port 0),
// then tests/support/scrape_metrics.py parses the text with an independent
// reader (Debian's python3-prometheus-client, run with /usr/bin/python3,
// which has it whatever python3 comes first on PATH).
#ifndef TESTS_SUPPORT_METRICS_SCRAPE_H_
#define TESTS_SUPPORT_METRICS_SCRAPE_H_

#include <boost/json.hpp>
#include <chrono>
#include <map>
#include <regex>
#include <string>
#include <thread>

#include "crawl_output.h"
#include "run_command.h"

namespace crawler::testing {

struct Scraped {
  bool ok = false;
  std::string error;  // the checker's words when !ok
  std::string content_type;
  std::map<std::string, std::string> types;  // family -> counter, gauge, ...
  std::map<std::string, double> samples;     // "name{k=v,...}" (labels sorted)
  double Get(const std::string& key) const {
    auto it = samples.find(key);
    return it == samples.end() ? -1 : it->second;
  }
  // The sum of every sample named `name` (any labels); -1 when none.
  double Sum(const std::string& name) const {
    double sum = 0;
    bool any = false;
    for (const auto& [key, v] : samples) {
      if (key.compare(0, name.size() + 1, name + "{") == 0) {
        sum += v;
        any = true;
      }
    }
    return any ? sum : -1;
  }
  size_t Count(const std::string& name) const {
    size_t n = 0;
    for (const auto& [key, v] : samples)
      n += key.compare(0, name.size() + 1, name + "{") == 0;
    return n;
  }
};

// The metrics URL a crawler logged to `log_path`, waiting up to `wait_s`.
inline std::string MetricsUrl(const std::string& log_path, double wait_s = 30) {
  static const std::regex kServing("metrics: serving (http://[^ \n]+)");
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  while (std::chrono::steady_clock::now() < until) {
    std::smatch m;
    std::string text = ReadText(log_path);
    if (std::regex_search(text, m, kServing)) return m[1];
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return "";
}

inline Scraped Scrape(const std::string& url) {
  Scraped s;
  CommandResult r = RunCommand(
      "/usr/bin/python3 " CRAWLER_SOURCE_DIR "/tests/support/scrape_metrics.py " + url);
  if (r.exit_code != 0) {
    s.error = r.output;
    return s;
  }
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(r.output, ec);
  if (ec || !v.is_object()) {
    s.error = "not JSON: " + r.output;
    return s;
  }
  const boost::json::object& o = v.as_object();
  s.content_type = boost::json::value_to<std::string>(o.at("content_type"));
  for (const auto& [k, t] : o.at("types").as_object())
    s.types[std::string(k)] = boost::json::value_to<std::string>(t);
  for (const auto& [k, x] : o.at("samples").as_object())
    s.samples[std::string(k)] = x.to_number<double>();
  s.ok = true;
  return s;
}

// The first line of the answer to a GET of `path` on `url`'s host:port.
inline std::string StatusLineOf(const std::string& url, const std::string& path) {
  std::string authority = url.substr(7, url.find('/', 7) - 7);
  std::string host = authority.substr(0, authority.rfind(':'));
  std::string port = authority.substr(authority.rfind(':') + 1);
  CommandResult r =
      RunCommand("bash -c 'exec 3<>/dev/tcp/" + host + "/" + port + "; printf \"GET " +
                 path + " HTTP/1.0\\r\\n\\r\\n\" >&3; head -1 <&3'");
  return r.output;
}

}  // namespace crawler::testing

#endif  // TESTS_SUPPORT_METRICS_SCRAPE_H_
