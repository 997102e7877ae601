// See host_table.h.
#include "engine/host_table.h"

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "base/bytes.h"
#include "base/file_util.h"
#include "base/heap_bytes.h"
#include "engine/scope.h"

namespace crawler::engine {
namespace {

using frontier::Clock;

constexpr char kMagic[8] = {'C', 'R', 'W', 'L', 'H', 'O', 'S', 'T'};
constexpr uint32_t kVersion = 2;  // 1: no 'D' records

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// What a host with no rules kept is judged by: no rules, all allowed.
const parsers::Robots kNoRules;

// Rules worth keeping: any rule, or all disallowed (a Robots with neither
// allows everything, as kNoRules does). Crawl-delay and sitemaps are read
// before.
std::unique_ptr<const parsers::Robots> Kept(parsers::Robots robots) {
  if (robots.rules().empty() && !robots.disallow_all()) return nullptr;
  return std::make_unique<const parsers::Robots>(std::move(robots));
}

}  // namespace

void HostTable::RobotsStarted(const Gate::Pass&, const std::string& host,
                              const std::string& url, int hops) {
  MutexLock lock(mu_);
  Host& h = hosts_[host];
  if (Known(h.robots_state)) {
    h.robots_state = RobotsState::kRefreshing;  // the cached rules hold meanwhile
    return;
  }
  h.robots_state = RobotsState::kFetching;
  h.robots_url = url;
  h.robots_hops = static_cast<uint32_t>(hops);
}

std::optional<double> HostTable::RobotsDone(const Gate::Pass&, const std::string& host,
                                            parsers::RobotsFetch outcome,
                                            std::string_view body, Clock::time_point now,
                                            std::vector<std::string>* sitemaps) {
  parsers::Robots robots = parsers::Robots::ForFetch(outcome, body, user_agent_);
  std::optional<double> delay = robots.crawl_delay();
  if (sitemaps != nullptr && !robots.disallow_all()) *sitemaps = robots.sitemaps();
  MutexLock lock(mu_);
  Host& h = hosts_[host];
  h.robots = Kept(std::move(robots));
  h.robots_time = now;
  h.robots_state = RobotsState::kKnown;
  h.robots_outcome = outcome;
  h.unanswered = FetchError::kNone;
  h.robots_body = outcome == parsers::RobotsFetch::kOk
                      ? std::string(body.substr(0, kMaxRobotsBody))
                      : "";
  h.robots_url.clear();
  h.robots_url.shrink_to_fit();
  h.robots_hops = 0;
  h.robots_failures = 0;
  return delay;
}

uint32_t HostTable::RobotsFailed(const Gate::Pass&, const std::string& host) {
  MutexLock lock(mu_);
  return ++hosts_[host].robots_failures;
}

uint32_t HostTable::RobotsFailures(const Gate::Pass&, const std::string& host) const {
  MutexLock lock(mu_);
  auto it = hosts_.find(host);
  return it == hosts_.end() ? 0 : it->second.robots_failures;
}

void HostTable::Uncount(const Gate::Pass&, const std::string& host) {
  MutexLock lock(mu_);
  auto it = hosts_.find(host);
  if (it == hosts_.end() || it->second.fetched == 0) return;
  --it->second.fetched;
  if (it->second.domain != nullptr && it->second.domain->fetched > 0)
    --it->second.domain->fetched;
}

DomainBudgets::Domain& HostTable::DomainOf(const std::string& key, Host& h) {
  if (h.domain == nullptr) h.domain = &domains_.Get(SiteOfHostKey(key));
  return *h.domain;
}

std::vector<const char*> HostTable::ReserveUrls(
    const Gate::Pass&, const std::vector<frontier::UrlEntry>& entries,
    const std::vector<std::string>& domains, const std::vector<std::string>& from) {
  std::vector<const char*> out(entries.size(), nullptr);
  std::unordered_set<std::string> new_hosts;  // of this batch, charged already
  MutexLock lock(mu_);
  for (size_t i = 0; i < entries.size(); ++i) {
    DomainBudgets::Domain& d = domains_.Get(domains[i]);
    const frontier::UrlEntry& e = entries[i];
    if (e.depth == 0 && e.referrer.empty() && e.kind == frontier::UrlEntry::Kind::kPage)
      d.seeded = true;
    if (!from[i].empty() && from[i] != domains[i]) domains_.Link(d, from[i]);
    // On a domain with a budget, a URL of a host not seen yet costs its
    // robots.txt fetch too: a farm's endless hosts spend the budget.
    uint64_t cost = 1;
    if (domains_.Budgeted(d)) {
      std::string key(frontier::HostKey(e.url));
      if (hosts_.count(key) == 0 && new_hosts.insert(std::move(key)).second) cost = 2;
    }
    if (d.queued + cost > domains_.UrlBudget(d)) {
      out[i] = "domain_urls";
    } else {
      d.queued += cost;
    }
  }
  return out;
}

void HostTable::ReturnUrls(const Gate::Pass&, const std::vector<std::string>& domains) {
  MutexLock lock(mu_);
  for (const std::string& name : domains) {
    DomainBudgets::Domain& d = domains_.Get(name);
    if (d.queued > 0) --d.queued;
  }
}

HostTable::PageDecision HostTable::DecidePage(const Gate::Pass&, const std::string& host,
                                              std::string_view path,
                                              Clock::time_point now) {
  PageDecision d;
  MutexLock lock(mu_);
  Host& h = hosts_[host];
  d.allowed = (h.robots ? *h.robots : kNoRules).Allowed(path.empty() ? "/" : path);
  if (!d.allowed && h.unanswered != FetchError::kNone) {
    d.unresolved =
        h.unanswered == FetchError::kDns || h.unanswered == FetchError::kDnsFailure;
    if (IsLoss(h.unanswered)) d.lost = FetchErrorName(h.unanswered);
  }
  d.over_limit = h.fetched >= max_pages_per_host_;
  DomainBudgets::Domain* domain = budgets_enabled_ ? &DomainOf(host, h) : nullptr;
  d.over_budget = domain != nullptr && domain->fetched >= domains_.PageBudget(*domain);
  if (d.allowed && !d.over_limit && !d.over_budget) {
    ++h.fetched;
    if (domain != nullptr) ++domain->fetched;
  }
  if (h.robots_state == RobotsState::kKnown &&
      Seconds(now - h.robots_time) > robots_cache_s_) {
    h.robots_state = RobotsState::kRefreshing;
    d.refresh_robots = true;
  }
  return d;
}

void HostTable::SetUnanswered(const Gate::Pass&, const std::string& host,
                              FetchError error) {
  MutexLock lock(mu_);
  hosts_[host].unanswered = error;
}

bool HostTable::RobotsFetching(const Gate::Pass&,
                               const std::function<bool(std::string_view)>& which) const {
  MutexLock lock(mu_);
  for (const auto& [key, h] : hosts_) {
    if ((h.robots_state == RobotsState::kFetching ||
         h.robots_state == RobotsState::kRefreshing) &&
        which(key))
      return true;
  }
  return false;
}

void HostTable::SetRobotsInFlight(const Gate::Pass&, const std::string& host,
                                  bool in_flight) {
  MutexLock lock(mu_);
  auto it = hosts_.find(host);
  if (it != hosts_.end()) it->second.robots_in_flight = in_flight;
}

bool HostTable::RobotsInFlight(const Gate::Pass&,
                               const std::function<bool(std::string_view)>& which) const {
  MutexLock lock(mu_);
  for (const auto& [key, h] : hosts_) {
    if (h.robots_in_flight && which(key)) return true;
  }
  return false;
}

HostTable::Figures HostTable::Summarize(size_t n) const {
  Figures f;
  // The n hosts with the most pages, kept in a heap whose front is the
  // least of them: no copy of every host's key (10^6 strings a refresh).
  using Entry = std::pair<uint64_t, const std::string*>;
  auto better = [](const Entry& a, const Entry& b) {
    return a.first > b.first || (a.first == b.first && *a.second < *b.second);
  };
  std::vector<Entry> best;
  MutexLock lock(mu_);
  f.memory_bytes = heap_bytes::Nodes(hosts_) + domains_.HeapBytes();
  for (const auto& [key, h] : hosts_) {
    f.memory_bytes +=
        heap_bytes::Of(key) +
        (h.robots ? heap_bytes::Alloc(sizeof(parsers::Robots)) + h.robots->HeapBytes()
                  : 0) +
        heap_bytes::Of(h.robots_body) + heap_bytes::Of(h.robots_url);
    if (Known(h.robots_state) &&
        (h.robots_outcome == parsers::RobotsFetch::kServerError ||
         h.robots_outcome == parsers::RobotsFetch::kUnreachable)) {
      ++f.blocked_by_robots;
    }
    const Entry e{h.fetched, &key};
    if (best.size() < n) {
      best.push_back(e);
      std::push_heap(best.begin(), best.end(), better);
    } else if (n > 0 && better(e, best.front())) {
      std::pop_heap(best.begin(), best.end(), better);
      best.back() = e;
      std::push_heap(best.begin(), best.end(), better);
    }
  }
  domains_.Count(&f.domains, &f.domains_at_budget);
  std::sort_heap(best.begin(), best.end(), better);
  for (const auto& [fetched, key] : best) f.top.emplace_back(fetched, *key);
  return f;
}

Status HostTable::Write(std::FILE* out, const std::string& path,
                        Clock::time_point cut) const {
  ByteWriter w;
  w.Bytes(reinterpret_cast<const uint8_t*>(kMagic), sizeof(kMagic));
  w.U32(kVersion);
  w.U32(0);
  for (const auto& [key, h] : hosts_) {
    w.U8('H');
    w.Str(key);
    w.U8(static_cast<uint8_t>(h.robots_state));
    w.U8(static_cast<uint8_t>(h.robots_outcome));
    w.F64(Known(h.robots_state) ? Seconds(cut - h.robots_time) : 0);
    w.U64(h.fetched);
    w.U32(h.robots_hops);
    w.Str(h.robots_url);
    w.Str(h.robots_body);
  }
  for (const DomainSnapshot& d : domains_.Snapshot()) {
    w.U8('D');
    w.Str(d.name);
    w.U8(d.seeded ? 1 : 0);
    w.U64(d.queued);
    w.U32(static_cast<uint32_t>(d.linkers.size()));
    for (uint64_t l : d.linkers) w.U64(l);
  }
  w.U8('E');
  w.U64(hosts_.size());
  std::string_view bytes = w.view();
  if (std::fwrite(bytes.data(), 1, bytes.size(), out) != bytes.size())
    return IoError(path, "write");
  return Status::Ok();
}

namespace {

// hosts.bin's records: hosts into `hosts`, domains into `domains`.
Status Parse(std::string_view bytes, const std::string& path,
             std::vector<HostSnapshot>* hosts, std::vector<DomainSnapshot>* domains,
             uint32_t* version_out = nullptr) {
  auto damaged = [&](const std::string& what) {
    return Status::Error(Status::Code::kCorruption, path + ": " + what);
  };
  if (bytes.size() < 16 || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return Status::Error(Status::Code::kBadMagic, path + ": not a host table");
  }
  ByteReader r(bytes.substr(8));
  uint32_t version = r.U32();
  r.U32();
  if (version != 1 && version != kVersion) {
    return Status::Error(Status::Code::kBadVersion,
                         path + ": host table version " + std::to_string(version));
  }
  if (version_out != nullptr) *version_out = version;
  while (r.ok() && !r.AtEnd()) {
    uint8_t tag = r.U8();
    if (tag == 'E') {
      uint64_t n = r.U64();
      if (!r.ok() || !r.AtEnd()) break;
      if (n != hosts->size())
        return damaged("record count does not match its end record");
      return Status::Ok();
    }
    if (tag == 'D' && version >= 2) {
      DomainSnapshot d;
      d.name = r.Str();
      d.seeded = r.U8() != 0;
      d.queued = r.U64();
      const uint32_t n = r.U32();
      if (!r.ok() || n > r.remaining() / 8) break;
      d.linkers.resize(n);
      for (uint64_t& l : d.linkers) l = r.U64();
      domains->push_back(std::move(d));
      continue;
    }
    if (tag != 'H') return damaged("unknown record tag " + std::to_string(tag));
    HostSnapshot h;
    h.key = r.Str();
    uint8_t state = r.U8(), outcome = r.U8();
    h.robots_age_s = r.F64();
    h.fetched = r.U64();
    h.robots_hops = r.U32();
    h.robots_url = r.Str();
    h.robots_body = r.Str();
    if (r.ok() && (state > 3 || outcome > 4))
      return damaged("bad robots state for host " + h.key);
    h.robots_state = static_cast<RobotsState>(state);
    h.robots_outcome = static_cast<parsers::RobotsFetch>(outcome);
    hosts->push_back(std::move(h));
  }
  return damaged("truncated or trailing bytes");
}

}  // namespace

Result<std::vector<HostSnapshot>> HostTable::Decode(std::string_view bytes,
                                                    const std::string& path) {
  std::vector<HostSnapshot> hosts;
  std::vector<DomainSnapshot> domains;
  Status st = Parse(bytes, path, &hosts, &domains);
  if (!st.ok()) return st;
  return hosts;
}

Result<std::vector<DomainSnapshot>> HostTable::DecodeDomains(std::string_view bytes,
                                                             const std::string& path) {
  std::vector<HostSnapshot> hosts;
  std::vector<DomainSnapshot> domains;
  uint32_t version = 0;
  Status st = Parse(bytes, path, &hosts, &domains, &version);
  if (!st.ok()) return st;
  // A crawl checkpointed before budgets existed: its domains keep none.
  if (version == 1) {
    for (const HostSnapshot& h : hosts)
      domains.push_back({SiteOfHostKey(h.key), true, 0, {}});
  }
  return domains;
}

void HostTable::RestoreDomains(std::vector<DomainSnapshot> domains) {
  MutexLock lock(mu_);
  domains_.Restore(std::move(domains));
}

std::vector<RobotsFetchToStart> HostTable::Restore(
    std::vector<HostSnapshot> hosts,
    const std::unordered_map<std::string, uint64_t>& leased, Clock::time_point now) {
  std::vector<RobotsFetchToStart> restart;
  MutexLock lock(mu_);
  for (HostSnapshot& s : hosts) {
    Host& h = hosts_[s.key];
    auto again = leased.find(s.key);
    uint64_t in_flight = again == leased.end() ? 0 : again->second;
    h.fetched = s.fetched > in_flight ? s.fetched - in_flight : 0;
    // A domain's pages started: its hosts' (hosts.bin keeps no second count).
    if (budgets_enabled_) DomainOf(s.key, h).fetched += h.fetched;
    if (Known(s.robots_state)) {
      h.robots =
          Kept(parsers::Robots::ForFetch(s.robots_outcome, s.robots_body, user_agent_));
      h.robots_state =
          RobotsState::kKnown;  // a refresh under way at the cut starts again when due
      h.robots_outcome = s.robots_outcome;
      h.robots_body = std::move(s.robots_body);
      h.robots_time = now - std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(s.robots_age_s));
    } else {
      bool resume_chain =
          s.robots_state == RobotsState::kFetching && !s.robots_url.empty();
      restart.push_back({s.key, resume_chain ? s.robots_url : s.key + "/robots.txt",
                         resume_chain ? static_cast<int>(s.robots_hops) : 0});
    }
  }
  return restart;
}

}  // namespace crawler::engine
