// robots.txt per RFC 9309: parsing, group selection and the allow decision.
//
// Robots::Parse reads at most kMaxRobotsBytes (500 KiB, RFC 9309 2.5) of a
// robots.txt body and keeps the rules of the group(s) that apply to one
// product token (our User-Agent's first word):
//   - user-agent lines are matched case-insensitively on the product token;
//     several user-agent lines in a row share one group; all groups naming
//     the token are merged (2.2.1); the "*" group is the fallback;
//   - Allow/Disallow patterns support "*" (any run of characters) and a
//     trailing "$" (end of the path); the longest matching pattern wins,
//     and Allow wins a tie (2.2.2); an empty Disallow allows everything;
//   - patterns and paths are compared after percent-encoding normalization
//     (unreserved escapes decoded, other hex uppercased, non-ASCII bytes
//     encoded), so "/%7Ea" matches "/~a" (2.2.2);
//   - "/robots.txt" is always allowed (2.2.2);
//   - Crawl-delay (non-standard) and Sitemap lines are exposed; any other
//     line is kept as a warning with its line number, never an error, and
//     an unknown record does not end a group (2.1);
//   - a line without a colon that is exactly two words ("Disallow /") is
//     read as "key: value", as Google's parser does (with a warning): it
//     errs toward what the site meant;
//   - a pattern longer than 4096 bytes (after normalization) is cut to its
//     first 4096, never dropped (a cut Disallow matches more, not less);
//   - a UTF-8 byte-order mark, whole or its first one or two bytes, is
//     skipped.
// Robots::ForFetch turns the engine's fetch outcome into a decision
// (2.3.1): 2xx -> the parsed rules; 4xx (and more than 5 redirects) ->
// allow all; 5xx or unreachable -> disallow all, until a retry succeeds.
//
// A Robots value is immutable after construction: any thread may query it.
#ifndef PARSERS_ROBOTS_H_
#define PARSERS_ROBOTS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace crawler::parsers {

inline constexpr size_t kMaxRobotsBytes = 500 * 1024;
inline constexpr int kMaxRobotsRedirects = 5;

enum class RobotsFetch {
  kOk,                // 2xx: the body is parsed
  kClientError,       // 4xx: allow all
  kTooManyRedirects,  // > 5 hops: treated as unavailable, allow all
  kServerError,       // 5xx: disallow all (for now)
  kUnreachable,       // connection/DNS failure: disallow all (for now)
};

// RFC 9309 2.3.1: the outcome of a robots.txt fetch that ended with HTTP
// `status` (0: no response). A 3xx here is a redirect chain that was not
// (or no longer) followed: kTooManyRedirects.
RobotsFetch RobotsFetchForStatus(long status);

class Robots {
 public:
  struct Rule {
    bool allow = false;
    std::string pattern;  // normalized
  };

  // Parses `body` for `product_token` (e.g. "crawler"; case-insensitive).
  static Robots Parse(std::string_view body, std::string_view product_token);
  static Robots ForFetch(RobotsFetch outcome, std::string_view body,
                         std::string_view product_token);
  static Robots AllowAll();
  static Robots DisallowAll();

  // True iff `path` (path plus optional "?query", as sent in the request
  // line) may be fetched.
  bool Allowed(std::string_view path) const;

  std::optional<double> crawl_delay() const { return crawl_delay_; }
  const std::vector<std::string>& sitemaps() const { return sitemaps_; }
  const std::vector<std::string>& warnings() const { return warnings_; }
  const std::vector<Rule>& rules() const { return rules_; }
  bool disallow_all() const { return disallow_all_; }
  bool truncated() const { return truncated_; }  // body was over 500 KiB
  // Heap bytes its rules, sitemaps and warnings hold (base/heap_bytes.h).
  uint64_t HeapBytes() const;

 private:
  std::vector<Rule> rules_;
  std::optional<double> crawl_delay_;
  std::vector<std::string> sitemaps_;
  std::vector<std::string> warnings_;
  bool disallow_all_ = false;
  bool truncated_ = false;
};

// Percent-encoding normalization used for patterns and paths (exposed for tests).
std::string NormalizeRobotsPath(std::string_view path);

// True iff `pattern` ("*" wildcards, optional trailing "$") matches a prefix of
// `path` (or all of it, with "$"). Both already normalized.
bool RobotsPatternMatches(std::string_view pattern, std::string_view path);

}  // namespace crawler::parsers

#endif  // PARSERS_ROBOTS_H_
