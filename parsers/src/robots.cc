// robots.txt per RFC 9309; see parsers/robots.h.
#include "parsers/robots.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "ascii.h"
#include "base/heap_bytes.h"

namespace crawler::parsers {
namespace {

constexpr size_t kMaxPatternBytes = 4096;  // bounds the O(path x pattern) matcher

using ascii::Lower;
using ascii::LowerAscii;
using crawler::ascii::Trim;

// The product token of a user-agent value: up to the first '/' or space.
std::string ProductToken(std::string_view value) {
  size_t end = value.find_first_of("/ \t");
  return LowerAscii(value.substr(0, end));
}

struct Group {
  std::vector<std::string> agents;
  std::vector<Robots::Rule> rules;
  std::optional<double> crawl_delay;
};

}  // namespace

std::string NormalizeRobotsPath(std::string_view path) {
  return ascii::NormalizePercent(path, /*encode_raw=*/true);
}

bool RobotsPatternMatches(std::string_view pattern, std::string_view path) {
  // The set of path positions reachable after consuming a pattern prefix,
  // kept as a sorted vector (google/robotstxt's approach): O(|path| x |pattern|).
  std::vector<size_t> pos = {0};
  std::vector<size_t> next;
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '$' && i + 1 == pattern.size()) {
      return pos.back() == path.size();
    }
    next.clear();
    if (c == '*') {
      for (size_t p = pos.front(); p <= path.size(); ++p) next.push_back(p);
    } else {
      for (size_t p : pos) {
        if (p < path.size() && path[p] == c) next.push_back(p + 1);
      }
      if (next.empty()) return false;
    }
    pos.swap(next);
  }
  return true;
}

Robots Robots::AllowAll() { return Robots(); }

Robots Robots::DisallowAll() {
  Robots r;
  r.disallow_all_ = true;
  return r;
}

Robots Robots::ForFetch(RobotsFetch outcome, std::string_view body,
                        std::string_view product_token) {
  switch (outcome) {
    case RobotsFetch::kOk:
      return Parse(body, product_token);
    case RobotsFetch::kClientError:
    case RobotsFetch::kTooManyRedirects:
      return AllowAll();
    case RobotsFetch::kServerError:
    case RobotsFetch::kUnreachable:
      return DisallowAll();
  }
  return DisallowAll();
}

namespace {

// `body` without a UTF-8 byte-order mark, or the start of one (a cut or
// mangled BOM must not take the first line with it).
std::string_view WithoutBom(std::string_view body) {
  for (std::string_view bom : {"\xEF\xBB\xBF", "\xEF\xBB", "\xEF"}) {
    if (body.substr(0, bom.size()) == bom) return body.substr(bom.size());
  }
  return body;
}

// The next line of `body` from `*start` (CR, LF or CRLF ends it); false at
// the end.
bool NextLine(std::string_view body, size_t* start, std::string_view* line) {
  if (*start >= body.size()) return false;
  size_t end = body.find_first_of("\r\n", *start);
  if (end == std::string_view::npos) end = body.size();
  *line = body.substr(*start, end - *start);
  *start = end + 1;
  if (end < body.size() && body[end] == '\r' && *start < body.size() &&
      body[*start] == '\n')
    ++*start;
  return true;
}

// Splits a trimmed, non-empty line into its lowercased key and its value.
// "Disallow /", a missing colon, is read as "Disallow: /" when the line is
// exactly two words (as Google's parser does); anything else is ignored.
// Either way `*warning` says so. False: ignore the line.
bool KeyValue(std::string_view line, std::string* key, std::string_view* value,
              std::string* warning) {
  size_t colon = line.find(':');
  size_t value_at = colon + 1;
  if (colon == std::string_view::npos) {
    colon = line.find_first_of(" \t");
    value_at = line.find_first_not_of(" \t", colon);
    bool two_words = colon != std::string_view::npos &&
                     line.find_first_of(" \t", value_at) == std::string_view::npos;
    *warning = "no ':' in '" + std::string(line.substr(0, 80)) + "'" +
               (two_words ? ", read as 'key: value'" : "");
    if (!two_words) return false;
  }
  *key = LowerAscii(Trim(line.substr(0, colon)));
  *value = Trim(line.substr(value_at));
  return true;
}

// A Crawl-delay value: seconds, 0 to a day. nullopt: unreadable.
std::optional<double> CrawlDelay(std::string_view value) {
  char* parse_end = nullptr;
  std::string v(value);
  double delay = std::strtod(v.c_str(), &parse_end);
  if (v.empty() || parse_end != v.c_str() + v.size() || !(delay >= 0) || delay > 86400)
    return std::nullopt;
  return delay;
}

// An Allow/Disallow value as a pattern. One longer than 4096 bytes is kept,
// cut to its first 4096 bytes (never inside a %XX escape): a Disallow then
// matches more paths, never fewer; `*warning` says so.
std::string RulePattern(std::string_view value, std::string* warning) {
  std::string pattern = NormalizeRobotsPath(value);
  if (pattern.size() <= kMaxPatternBytes) return pattern;
  size_t cut = kMaxPatternBytes;
  if (size_t pct = pattern.rfind('%', cut - 1); pct != std::string::npos && pct + 3 > cut)
    cut = pct;
  pattern.resize(cut);
  *warning = "pattern longer than 4096 bytes cut to its first " + std::to_string(cut);
  return pattern;
}

// Our groups: every group naming our token (merged), else every "*" group;
// their rules, and the largest of their Crawl-delays.
void SelectGroups(const std::vector<Group>& groups, const std::string& token,
                  std::vector<Robots::Rule>* rules, std::optional<double>* delay) {
  for (const std::string& want : {token, std::string("*")}) {
    bool found = false;
    for (const Group& g : groups) {
      if (std::find(g.agents.begin(), g.agents.end(), want) == g.agents.end()) continue;
      found = true;
      rules->insert(rules->end(), g.rules.begin(), g.rules.end());
      if (g.crawl_delay && (!*delay || *g.crawl_delay > **delay)) *delay = g.crawl_delay;
    }
    if (found) return;
  }
}

}  // namespace

Robots Robots::Parse(std::string_view body, std::string_view product_token) {
  Robots r;
  if (body.size() > kMaxRobotsBytes) {
    body = body.substr(0, kMaxRobotsBytes);
    r.truncated_ = true;
    r.warnings_.push_back("robots.txt is larger than 500 KiB; the rest is ignored");
  }
  body = WithoutBom(body);
  const std::string token = ProductToken(product_token);

  std::vector<Group> groups;
  bool last_was_agent = false;
  size_t line_no = 0;
  size_t start = 0;
  std::string_view line;
  while (NextLine(body, &start, &line)) {
    ++line_no;
    const std::string where = "line " + std::to_string(line_no) + ": ";

    if (size_t hash = line.find('#'); hash != std::string_view::npos)
      line = line.substr(0, hash);
    line = Trim(line);
    if (line.empty()) continue;
    std::string key, warning;
    std::string_view value;
    bool use = KeyValue(line, &key, &value, &warning);
    if (!warning.empty()) r.warnings_.push_back(where + warning);
    if (!use) continue;

    if (key == "user-agent") {
      if (!last_was_agent) groups.emplace_back();
      groups.back().agents.push_back(ProductToken(value));
      last_was_agent = true;
      continue;
    }
    if (key == "sitemap") {
      r.sitemaps_.emplace_back(value);
      continue;  // not a group member: does not end a run of user-agent lines
    }
    if (key == "allow" || key == "disallow" || key == "crawl-delay") {
      last_was_agent = false;
      if (groups.empty()) {
        r.warnings_.push_back(where + "'" + key + "' before any user-agent line");
        continue;
      }
      if (key == "crawl-delay") {
        std::optional<double> delay = CrawlDelay(value);
        if (!delay) {
          r.warnings_.push_back(where + "bad crawl-delay '" + std::string(value) + "'");
        } else {
          groups.back().crawl_delay = delay;
        }
        continue;
      }
      if (value.empty())
        continue;  // "Disallow:" allows everything; "Allow:" says nothing
      std::string cut;
      std::string pattern = RulePattern(value, &cut);
      if (!cut.empty()) r.warnings_.push_back(where + cut);
      groups.back().rules.push_back(Rule{key == "allow", std::move(pattern)});
      continue;
    }
    // RFC 9309 2.1: records it does not know are ignored; they do not end a
    // run of user-agent lines (a group).
    r.warnings_.push_back(where + "unknown key '" + key + "'");
  }

  SelectGroups(groups, token, &r.rules_, &r.crawl_delay_);
  return r;
}

uint64_t Robots::HeapBytes() const {
  uint64_t n = heap_bytes::Buffer(rules_) + heap_bytes::Buffer(sitemaps_) +
               heap_bytes::Buffer(warnings_);
  for (const Rule& r : rules_) n += heap_bytes::Of(r.pattern);
  for (const std::string& s : sitemaps_) n += heap_bytes::Of(s);
  for (const std::string& w : warnings_) n += heap_bytes::Of(w);
  return n;
}

bool Robots::Allowed(std::string_view path) const {
  std::string p = NormalizeRobotsPath(path.empty() ? std::string_view("/") : path);
  if (p == "/robots.txt") return true;
  if (disallow_all_) return false;
  size_t best = 0;
  bool matched = false, allow = true;
  for (const Rule& rule : rules_) {
    if (!RobotsPatternMatches(rule.pattern, p)) continue;
    size_t len = rule.pattern.size();
    if (!matched || len > best) {
      allow = rule.allow;
      best = len;
      matched = true;
    } else if (len == best && rule.allow) {
      allow = true;  // RFC 9309 2.2.2: on a tie, allow wins
    }
  }
  return allow;
}

RobotsFetch RobotsFetchForStatus(long status) {
  if (status >= 200 && status < 300) return RobotsFetch::kOk;
  if (status >= 300 && status < 400) return RobotsFetch::kTooManyRedirects;
  if (status >= 400 && status < 500) return RobotsFetch::kClientError;
  if (status >= 500) return RobotsFetch::kServerError;
  return RobotsFetch::kUnreachable;  // 0 (no response) or a status below 200
}

}  // namespace crawler::parsers
