// See host_table.h.
#include "engine/host_table.h"

#include <algorithm>
#include <cstring>

#include "base/bytes.h"
#include "base/file_util.h"

namespace crawler::engine {
namespace {

using frontier::Clock;

constexpr char kMagic[8] = {'C', 'R', 'W', 'L', 'H', 'O', 'S', 'T'};
constexpr uint32_t kVersion = 1;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

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
  h.robots = std::move(robots);
  h.robots_time = now;
  h.robots_state = RobotsState::kKnown;
  h.robots_outcome = outcome;
  h.unresolved = false;
  h.robots_body = outcome == parsers::RobotsFetch::kOk
                      ? std::string(body.substr(0, kMaxRobotsBody))
                      : "";
  h.robots_url.clear();
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
  if (it != hosts_.end() && it->second.fetched > 0) --it->second.fetched;
}

HostTable::PageDecision HostTable::DecidePage(const Gate::Pass&, const std::string& host,
                                              std::string_view path,
                                              Clock::time_point now) {
  PageDecision d;
  MutexLock lock(mu_);
  Host& h = hosts_[host];
  d.allowed = h.robots.Allowed(path.empty() ? "/" : path);
  d.unresolved = !d.allowed && h.unresolved;
  d.over_limit = h.fetched >= max_pages_per_host_;
  if (d.allowed && !d.over_limit) ++h.fetched;
  if (h.robots_state == RobotsState::kKnown &&
      Seconds(now - h.robots_time) > robots_cache_s_) {
    h.robots_state = RobotsState::kRefreshing;
    d.refresh_robots = true;
  }
  return d;
}

void HostTable::SetUnresolved(const Gate::Pass&, const std::string& host,
                              bool unresolved) {
  MutexLock lock(mu_);
  hosts_[host].unresolved = unresolved;
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

HostTable::Figures HostTable::Summarize(size_t n) const {
  Figures f;
  {
    MutexLock lock(mu_);
    for (const auto& [key, h] : hosts_) {
      if (Known(h.robots_state) &&
          (h.robots_outcome == parsers::RobotsFetch::kServerError ||
           h.robots_outcome == parsers::RobotsFetch::kUnreachable)) {
        ++f.blocked_by_robots;
      }
      f.top.emplace_back(h.fetched, key);
    }
  }
  auto by_count = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  size_t keep = std::min(n, f.top.size());
  std::partial_sort(f.top.begin(), f.top.begin() + static_cast<std::ptrdiff_t>(keep),
                    f.top.end(), by_count);
  f.top.resize(keep);
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
  w.U8('E');
  w.U64(hosts_.size());
  std::string_view bytes = w.view();
  if (std::fwrite(bytes.data(), 1, bytes.size(), out) != bytes.size())
    return IoError(path, "write");
  return Status::Ok();
}

Result<std::vector<HostSnapshot>> HostTable::Decode(std::string_view bytes,
                                                    const std::string& path) {
  auto damaged = [&](const std::string& what) {
    return Status::Error(Status::Code::kCorruption, path + ": " + what);
  };
  if (bytes.size() < 16 || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return Status::Error(Status::Code::kBadMagic, path + ": not a host table");
  }
  ByteReader r(bytes.substr(8));
  uint32_t version = r.U32();
  r.U32();
  if (version != kVersion) {
    return Status::Error(Status::Code::kBadVersion,
                         path + ": host table version " + std::to_string(version));
  }
  std::vector<HostSnapshot> hosts;
  while (r.ok() && !r.AtEnd()) {
    uint8_t tag = r.U8();
    if (tag == 'E') {
      uint64_t n = r.U64();
      if (!r.ok() || !r.AtEnd()) break;
      if (n != hosts.size()) return damaged("record count does not match its end record");
      return hosts;
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
    hosts.push_back(std::move(h));
  }
  return damaged("truncated or trailing bytes");
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
    if (Known(s.robots_state)) {
      h.robots = parsers::Robots::ForFetch(s.robots_outcome, s.robots_body, user_agent_);
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
