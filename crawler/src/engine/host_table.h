// The engine's per-host state beside the frontier's queues: robots.txt (its
// fetch state and rules, RFC 9309) and the page count for the trap guard
// (crawl.max_pages_per_host); and per registered domain, its budgets
// (domain_budgets.h). Owns its checkpoint file, hosts.bin:
//
//   "CRWLHOST" | version u32 (2; 1 has no 'D') | 0 u32 | record* |
//   'E' hosts u64
//   record 'H': key str | robots_state u8 | robots_outcome u8 |
//               robots_age_s f64 | fetched u64 | robots_hops u32 |
//               robots_url str | robots_body str
//   record 'D': domain str | seeded u8 | queued u64 | n u32 | linker u64 * n
//   (little-endian, base/bytes.h; str := len u32 | bytes)
//
// Thread-safety: one mutex. Methods that workers call take a Gate::Pass
// (see gate.h: the checkpoint writer's fork must never find this mutex
// held); the others are for the thread that forks (Run) or for setup.
#ifndef CRAWLER_HOST_TABLE_H_
#define CRAWLER_HOST_TABLE_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "crawler/fetcher.h"
#include "engine/domain_budgets.h"
#include "engine/gate.h"
#include "frontier/frontier.h"
#include "parsers/robots.h"

namespace crawler::engine {

enum class RobotsState : uint8_t {
  kUnknown = 0,     // no fetch started (a restored host whose fetch must start again)
  kFetching = 1,    // the first robots.txt fetch is under way: no page yet
  kKnown = 2,       // rules known
  kRefreshing = 3,  // rules known and obeyed while a refresh is under way
};

// One host as a checkpoint stores it.
struct HostSnapshot {
  std::string key;
  RobotsState robots_state = RobotsState::kUnknown;
  parsers::RobotsFetch robots_outcome = parsers::RobotsFetch::kOk;  // when known
  double robots_age_s = 0;
  uint64_t fetched = 0;      // pages started
  uint32_t robots_hops = 0;  // kFetching: redirects followed so far ...
  std::string robots_url;    // ... and the URL being fetched
  std::string robots_body;   // kOk rules' source (at most kMaxRobotsBody)
};

// A robots.txt fetch to start (again) after a resume.
struct RobotsFetchToStart {
  std::string host, url;
  int hops = 0;
};

inline constexpr size_t kMaxRobotsBody = 512 * 1024;

class HostTable {
 public:
  HostTable(std::string user_agent, uint64_t max_pages_per_host, double robots_cache_s,
            DomainBudgetOptions budgets = {})
      : user_agent_(std::move(user_agent)),
        max_pages_per_host_(max_pages_per_host),
        robots_cache_s_(robots_cache_s),
        budgets_enabled_(DomainBudgets(budgets).enabled()),
        domains_(budgets) {}

  // A robots.txt fetch of `host` starts at `url`, `hops` redirects in.
  void RobotsStarted(const Gate::Pass&, const std::string& host, const std::string& url,
                     int hops) EXCLUDES(mu_);
  // It ended with `outcome`; returns the rules' Crawl-delay (and, if
  // `sitemaps` is given, the file's Sitemap: lines, unless all is disallowed).
  std::optional<double> RobotsDone(const Gate::Pass&, const std::string& host,
                                   parsers::RobotsFetch outcome, std::string_view body,
                                   frontier::Clock::time_point now,
                                   std::vector<std::string>* sitemaps = nullptr)
      EXCLUDES(mu_);

  // A robots.txt fetch of `host` failed in a way a server gets over (5xx,
  // no answer): how many times in a row it has now (RobotsDone resets it).
  // Its state stays as it was (fetching, or refreshing under cached rules).
  uint32_t RobotsFailed(const Gate::Pass&, const std::string& host) EXCLUDES(mu_);
  uint32_t RobotsFailures(const Gate::Pass&, const std::string& host) const EXCLUDES(mu_);

  struct PageDecision {
    bool allowed = false;      // robots.txt allows the path
    bool over_limit = false;   // max_pages_per_host reached
    bool over_budget = false;  // its registered domain's page budget is spent
    bool refresh_robots =
        false;  // the cached rules are older than robots_cache_s: fetch again
    bool unresolved = false;  // not allowed: the host's name did not resolve
    // Not allowed because the host's robots.txt had no answer, a loss
    // (IsLoss, CrawlCounts::lost): the failure's kind; null otherwise.
    const char* lost = nullptr;
  };
  // `host`'s last robots.txt fetch, given up, had no answer: `error` says
  // why (then its pages are not allowed; kDns and kDnsFailure skip them as
  // unresolved; IsLoss says which are losses; RobotsDone clears it). Not in
  // hosts.bin: after a resume such a host's pages count as robots-blocked.
  void SetUnanswered(const Gate::Pass&, const std::string& host, FetchError error)
      EXCLUDES(mu_);
  // May a page at `path` of `host` be fetched now? Counts it if so.
  PageDecision DecidePage(const Gate::Pass&, const std::string& host,
                          std::string_view path, frontier::Clock::time_point now)
      EXCLUDES(mu_);
  // A page DecidePage counted was not fetched after all (abandoned in flight).
  void Uncount(const Gate::Pass&, const std::string& host) EXCLUDES(mu_);

  // Admission: may each URL be queued, by its registered domain's URL
  // budget? `domains[i]` is entry i's domain, `from[i]` its referrer's ("":
  // none), both by SiteOf. Counts each one allowed as queued; records the
  // referrer's domain as linking to it; an entry with depth 0 and no
  // referrer is a seed, and makes its domain a seeded one. Returns, per
  // entry, nullptr (allowed) or the reason ("domain_urls").
  std::vector<const char*> ReserveUrls(const Gate::Pass&,
                                       const std::vector<frontier::UrlEntry>& entries,
                                       const std::vector<std::string>& domains,
                                       const std::vector<std::string>& from)
      EXCLUDES(mu_);
  // Those of them the frontier did not take (duplicates): not queued.
  void ReturnUrls(const Gate::Pass&, const std::vector<std::string>& domains)
      EXCLUDES(mu_);
  bool budgets_enabled() const { return budgets_enabled_; }

  // Is a robots.txt fetch under way (its rules not settled: in a fetcher,
  // waiting for room, or a retry waiting out its back-off) for a host
  // `which(key)` selects? (A cluster node does not give such a shard when
  // balancing: crawl.cc.)
  bool RobotsFetching(const Gate::Pass&,
                      const std::function<bool(std::string_view)>& which) const
      EXCLUDES(mu_);
  // A robots.txt fetch of `host` is in a fetcher (set as it is handed to
  // one), or its result is taken up (cleared).
  void SetRobotsInFlight(const Gate::Pass&, const std::string& host, bool in_flight)
      EXCLUDES(mu_);
  // Is a robots.txt fetch in a fetcher, or its result not taken up yet, for a
  // host `which(key)` selects? A cluster node drains a shard's fetches in
  // flight before handing it over; one not started yet goes with the shard
  // (its new owner starts it again: hosts.bin keeps it under way).
  bool RobotsInFlight(const Gate::Pass&,
                      const std::function<bool(std::string_view)>& which) const
      EXCLUDES(mu_);

  // For the stats report: hosts whose robots.txt disallows all for now (5xx
  // or unreachable), and the `n` hosts with the most pages started.
  struct Figures {
    uint64_t blocked_by_robots = 0;
    uint64_t domains = 0;            // registered domains with a budget record
    uint64_t domains_at_budget = 0;  // ... whose page budget is spent
    uint64_t memory_bytes = 0;       // heap held: hosts, robots rules, domains
    std::vector<std::pair<uint64_t, std::string>> top;
  };
  Figures Summarize(size_t n) const EXCLUDES(mu_);

  // hosts.bin. Write: REQUIRES no other thread changes the table (a forked
  // child's copy, or after the workers stopped). Errors name `path`.
  [[nodiscard]] Status Write(std::FILE* out, const std::string& path,
                             frontier::Clock::time_point cut) const
      NO_THREAD_SAFETY_ANALYSIS;
  static Result<std::vector<HostSnapshot>> Decode(std::string_view bytes,
                                                  const std::string& path);
  // The same file's domain records (none in a version 1 file).
  static Result<std::vector<DomainSnapshot>> DecodeDomains(std::string_view bytes,
                                                           const std::string& path);
  // Rebuilds the table (setup only). `leased`: pages that were in flight at
  // the cut, per host, which will be fetched again (their count is taken
  // back). Returns the robots.txt fetches to start again.
  std::vector<RobotsFetchToStart> Restore(
      std::vector<HostSnapshot> hosts,
      const std::unordered_map<std::string, uint64_t>& leased,
      frontier::Clock::time_point now) EXCLUDES(mu_);
  // The domains' records, merged into those known (seeded if either is, the
  // larger URL count, the union of linkers); their pages come from
  // Restore's hosts.
  void RestoreDomains(std::vector<DomainSnapshot> domains) EXCLUDES(mu_);

 private:
  struct Host {
    RobotsState robots_state = RobotsState::kUnknown;
    // The rules; null when there are none (not known yet, or a robots.txt
    // that allows all): most hosts, so 8 bytes, not a Robots (96).
    std::unique_ptr<const parsers::Robots> robots;
    parsers::RobotsFetch robots_outcome = parsers::RobotsFetch::kOk;
    frontier::Clock::time_point robots_time{};
    std::string robots_body;
    std::string robots_url;
    uint32_t robots_hops = 0;
    uint32_t robots_failures = 0;  // in a row (not in hosts.bin: a resume starts over)
    FetchError unanswered = FetchError::kNone;  // SetUnanswered (not in hosts.bin)
    bool robots_in_flight = false;              // SetRobotsInFlight (not in hosts.bin)
    uint64_t fetched = 0;
    DomainBudgets::Domain* domain = nullptr;  // when budgets apply: set at first use
  };
  static bool Known(RobotsState s) {
    return s == RobotsState::kKnown || s == RobotsState::kRefreshing;
  }

  const std::string user_agent_;
  const uint64_t max_pages_per_host_;
  const double robots_cache_s_;
  const bool budgets_enabled_;
  mutable Mutex mu_;
  // `key`'s domain record (budgets enabled).
  DomainBudgets::Domain& DomainOf(const std::string& key, Host& h) REQUIRES(mu_);

  std::unordered_map<std::string, Host> hosts_ GUARDED_BY(mu_);
  DomainBudgets domains_ GUARDED_BY(mu_);
};

}  // namespace crawler::engine

#endif  // CRAWLER_HOST_TABLE_H_
