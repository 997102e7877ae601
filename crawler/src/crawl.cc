// One crawl; see crawler/crawl.h.
#include "crawler/crawl.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <regex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "crawler/checkpoint.h"
#include "crawler/fetcher.h"
#include "crawler/warc.h"
#include "frontier/frontier.h"
#include "parsers/links.h"
#include "parsers/robots.h"

namespace crawler::engine {
namespace {

using frontier::Clock;

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// "h" of "scheme://h:p".
std::string_view HostName(std::string_view host_key) {
  size_t sep = host_key.find("://");
  std::string_view rest = sep == std::string_view::npos ? host_key : host_key.substr(sep + 3);
  if (!rest.empty() && rest[0] == '[') return rest.substr(0, rest.find(']') + 1);
  return rest.substr(0, rest.find(':'));
}

// The response head as stored in the WARC: libcurl hands us decoded bodies,
// so Content-Encoding/Content-Length are kept under X-Crawler-Original-* names
// and a Content-Length of the stored body is added.
std::string HeadForStoredBody(const std::string& head, size_t body_size) {
  std::string out;
  bool changed = false;
  size_t pos = 0;
  while (pos < head.size()) {
    size_t end = head.find("\r\n", pos);
    if (end == std::string::npos) end = head.size();
    std::string line = head.substr(pos, end - pos);
    pos = end + 2;
    if (line.empty()) break;
    std::string lower = line;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.rfind("content-encoding:", 0) == 0 || lower.rfind("content-length:", 0) == 0 ||
        lower.rfind("transfer-encoding:", 0) == 0) {
      out += "X-Crawler-Original-" + line + "\r\n";
      changed = true;
    } else {
      out += line + "\r\n";
    }
  }
  if (!changed) return head;
  return out + "Content-Length: " + std::to_string(body_size) + "\r\n\r\n";
}

// Workers pass it around each unit of work; the checkpoint closes it to take
// a consistent cut (see crawl.h).
class Gate {
 public:
  void Enter() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !closed_; });
    ++active_;
  }
  void Exit() {
    std::lock_guard<std::mutex> lock(mu_);
    if (--active_ == 0 && closed_) cv_.notify_all();
  }
  void Close() {
    std::unique_lock<std::mutex> lock(mu_);
    closed_ = true;
    cv_.wait(lock, [&] { return active_ == 0; });
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = false;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int active_ = 0;     // GUARDED_BY(mu_)
  bool closed_ = false;  // GUARDED_BY(mu_)
};

struct GateUnit {
  explicit GateUnit(Gate& g) : gate(g) { gate.Enter(); }
  ~GateUnit() { gate.Exit(); }
  Gate& gate;
};

constexpr size_t kMaxRobotsBody = 512 * 1024;

// The checkpoint writer runs in a fork()ed child. glibc's malloc and stdio
// are fork-safe (fork takes their locks), but the ASan allocator of GCC 12
// is not: a child forked while another thread allocates can deadlock. Under
// ASan the checkpoint is written in-process with the gate closed instead (same
// cut, same files; only the pause is longer).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kForkWriter = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kForkWriter = false;
#else
constexpr bool kForkWriter = true;
#endif
#else
constexpr bool kForkWriter = true;
#endif

// flock on OUT/.lock, retried for up to `wait_s` (a dying checkpoint child
// may still hold it for a moment). Returns the descriptor (kept open).
Result<int> LockOut(const std::string& out, double wait_s) {
  std::string path = out + "/.lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Error(Status::Code::kIoError, path + ": open: " + std::strerror(errno));
  auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait_s));
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (Clock::now() >= until) {
      ::close(fd);
      return Status::Error(Status::Code::kInvalidArgument,
                           out + ": in use by another crawler process (" + path + " is locked)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return fd;
}

double WallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

struct Crawl::Impl {
  struct HostState {
    parsers::Robots robots;
    Clock::time_point robots_time{};
    bool robots_done = false;
    bool robots_refreshing = false;
    uint64_t fetched = 0;
    uint8_t robots_outcome = 0;  // parsers::RobotsFetch, once done
    std::string robots_body;     // kept for checkpoints (at most kMaxRobotsBody)
    bool robots_pending = false; // first robots.txt fetch in flight at robots_url
    std::string robots_url;
    uint32_t robots_hops = 0;
  };
  struct Completed {
    bool robots = false;
    std::string host;         // robots: the host the robots.txt is for
    int hops = 0;             // robots: redirects followed so far
    frontier::Lease lease;    // pages
    FetchResult result;
  };
  // The costly part of processing a result, done outside the checkpoint
  // gate: WARC records built, links extracted.
  struct Prepared {
    PreparedExchange warc;
    parsers::ExtractResult links;
  };
  struct Worker;

  Config config;
  std::string out;
  std::unique_ptr<dedup::Filter> filter;
  std::unique_ptr<frontier::Frontier> frontier;
  std::unique_ptr<WarcWriter> warc;
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<std::string> seeds;
  std::unordered_set<std::string> scope_hosts;  // host keys or bare host names
  std::vector<std::regex> include, exclude;

  std::mutex log_mu;
  std::FILE* log = nullptr;  // GUARDED_BY(log_mu)
  std::string log_path;

  std::mutex hosts_mu;
  std::unordered_map<std::string, HostState> hosts;  // GUARDED_BY(hosts_mu)

  std::mutex pending_mu;
  std::condition_variable pending_cv;
  std::deque<Completed> pending;  // GUARDED_BY(pending_mu): fetched, not yet processed

  std::mutex summary_mu;
  CrawlSummary summary;  // GUARDED_BY(summary_mu)

  // Work begun and not yet finished: leases popped and robots.txt fetches
  // started, until their results (and the links they yield) are admitted.
  // The crawl is over when this is 0 and the frontier is empty.
  std::atomic<uint64_t> busy{0};
  std::atomic<uint64_t> started{0};      // page fetches started (max_pages)
  std::atomic<bool> max_pages_hit{false};
  std::atomic<bool> failed{false};
  std::mutex error_mu;
  Status first_error = Status::Ok();     // GUARDED_BY(error_mu)

  // Checkpoints and stats; all below but `gate`, `expected_false_seen` and
  // `last_fpr` are used by the Run thread only.
  Gate gate;
  double expected_false_seen = 0;        // GUARDED_BY(summary_mu)
  std::atomic<double> last_fpr{0};
  std::vector<std::string> scope_list;   // for the manifest
  double elapsed_base = 0;               // crawl time before this run (resume)
  uint64_t spilled_base = 0;             // URLs spilled before this run (resume)
  Clock::time_point run_start = Clock::now();
  uint64_t sequence = 0;                 // of the last checkpoint started
  pid_t child = -1;                      // the checkpoint writer running, if any
  int child_pipe = -1;
  Clock::time_point child_cut{};
  double child_pause_ms = 0;
  Clock::time_point last_checkpoint = Clock::now();
  uint64_t last_checkpoint_pages = 0;
  uint64_t checkpoints_written = 0, checkpoints_failed = 0;
  double last_pause_ms = 0, max_pause_ms = 0, last_write_s = 0;
  uint64_t last_checkpoint_bytes = 0;
  std::deque<std::pair<Clock::time_point, uint64_t>> rate_samples;  // for pages/s, last minute
  std::FILE* series = nullptr;
  int slow_ms = 0;                       // CRAWLER_CHECKPOINT_SLOW_MS (tests)
  int lock_fd = -1;
  std::vector<std::tuple<std::string, std::string, uint32_t>> resume_robots;  // host, url, hops

  ~Impl() {
    if (log != nullptr) std::fclose(log);
    if (series != nullptr) std::fclose(series);
    if (child > 0) ::waitpid(child, nullptr, 0);
    if (child_pipe >= 0) ::close(child_pipe);
    if (lock_fd >= 0) ::close(lock_fd);
  }

  double Elapsed() const {
    return elapsed_base + std::chrono::duration<double>(Clock::now() - run_start).count();
  }
  uint64_t PagesDone() {
    std::lock_guard<std::mutex> lock(summary_mu);
    return summary.fetched + summary.failed;
  }

  CheckpointHost HostForCheckpoint(const std::string& key) {
    CheckpointHost c;
    std::lock_guard<std::mutex> lock(hosts_mu);
    auto it = hosts.find(key);
    if (it == hosts.end()) return c;
    const HostState& h = it->second;
    c.robots_done = h.robots_done;
    c.robots_outcome = h.robots_outcome;
    c.robots_age_s = h.robots_done ? std::chrono::duration<double>(Clock::now() - h.robots_time).count() : 0;
    c.fetched = h.fetched;
    c.robots_pending = !h.robots_done && h.robots_pending;
    c.robots_hops = h.robots_hops;
    c.robots_url = h.robots_url;
    c.robots_body = h.robots_body;
    return c;
  }

  boost::json::object BuildStats(bool running);
  void WriteStats(bool running);
  Status StartCheckpoint(bool fork_writer);
  void PollCheckpoint(bool wait);


  void Fail(const Status& st) {
    std::lock_guard<std::mutex> lock(error_mu);
    if (!failed.exchange(true)) {
      first_error = st;
      spdlog::error("crawl stopped: {}", st.message());
    }
  }

  bool InScope(const std::string& url) const {
    std::string_view key = frontier::HostKey(url);
    std::string_view name = HostName(key);
    bool host_ok = scope_hosts.count(std::string(key)) > 0 || scope_hosts.count(std::string(name)) > 0;
    for (const std::string& d : config.crawl.scope_domains) {
      if (name == d || (name.size() > d.size() && name.ends_with(d) && name[name.size() - d.size() - 1] == '.')) {
        host_ok = true;
      }
    }
    if (!host_ok) return false;
    if (!include.empty() &&
        std::none_of(include.begin(), include.end(), [&](const std::regex& r) { return std::regex_search(url, r); })) {
      return false;
    }
    return std::none_of(exclude.begin(), exclude.end(),
                        [&](const std::regex& r) { return std::regex_search(url, r); });
  }

  void LogLine(const std::string& url, long status, const FetchResult* r, uint32_t depth,
               const std::string& referrer, const std::string& error, bool robots_file) {
    std::string line = "{\"url\":" + JsonString(url) + ",\"status\":" + std::to_string(status);
    if (r != nullptr) {
      line += ",\"content_type\":" + JsonString(r->content_type) +
              ",\"bytes\":" + std::to_string(r->body.size()) +
              ",\"fetch_ms\":" + std::to_string(static_cast<long>(r->seconds * 1000));
      if (r->truncated) line += ",\"truncated\":true";
      if (!r->location.empty()) line += ",\"location\":" + JsonString(r->location);
    }
    line += ",\"depth\":" + std::to_string(depth) + ",\"referrer\":" + JsonString(referrer);
    if (!error.empty()) line += ",\"error\":" + JsonString(error);
    if (robots_file) line += ",\"robots_txt\":true";
    line += "}\n";
    std::lock_guard<std::mutex> lock(log_mu);
    // Flushed per line: after a crash the log shows every page that was
    // processed (one write per page; parsing costs ~1000x more).
    std::fputs(line.c_str(), log);
    std::fflush(log);
  }

  // The WARC records of a response (digests + gzip: no lock, no shared state).
  PreparedExchange PrepareStore(const FetchResult& r) const {
    Exchange ex;
    ex.url = r.url;
    ex.ip = r.ip;
    ex.date = std::chrono::system_clock::now();
    ex.request = r.request_head;
    ex.response_head = HeadForStoredBody(r.response_head, r.body.size());
    ex.body = r.body;
    ex.truncated = r.truncated;
    return warc->Prepare(ex);
  }

  void Count(const FetchResult& r) {
    std::lock_guard<std::mutex> lock(summary_mu);
    if (r.status == 0) {
      ++summary.failed;
      ++summary.errors[FetchErrorName(r.error)];
      return;
    }
    ++summary.fetched;
    summary.bytes += r.body.size();
    if (r.truncated) {
      ++summary.truncated;
      ++summary.errors[FetchErrorName(FetchError::kTooLarge)];
    }
    long c = r.status / 100;
    (c == 2 ? summary.status_2xx : c == 3 ? summary.status_3xx : c == 4 ? summary.status_4xx
                                                                         : summary.status_5xx)++;
  }
  void CountSkip(uint64_t CrawlSummary::*field, uint64_t n = 1) {
    if (n == 0) return;
    std::lock_guard<std::mutex> lock(summary_mu);
    summary.*field += n;
  }
};

// One worker thread: its own libcurl multi handle with up to `max_running`
// transfers; it parses what it fetched, so parsing runs on every core.
struct Crawl::Impl::Worker {
  Worker(Impl& impl, std::unique_ptr<Fetcher> f, size_t max)
      : m(impl), fetcher(std::move(f)), max_running(max) {}
  Impl& m;
  std::unique_ptr<Fetcher> fetcher;
  const size_t max_running;
  std::vector<Completed> completed;  // filled by fetcher callbacks, this thread only
  std::atomic<bool> done{false};     // Loop has returned

  void StartRobots(const std::string& host, const std::string& url, int hops) {
    m.busy.fetch_add(1);
    {
      std::lock_guard<std::mutex> lock(m.hosts_mu);
      HostState& h = m.hosts[host];
      if (!h.robots_done) {
        h.robots_pending = true;
        h.robots_url = url;
        h.robots_hops = static_cast<uint32_t>(hops);
      }
    }
    fetcher->Add(url, [this, host, hops](FetchResult&& r) {
      completed.push_back(Completed{true, host, hops, {}, std::move(r)});
    });
  }

  Status Admit(std::vector<frontier::UrlEntry> entries) {
    if (entries.empty()) return Status::Ok();
    auto admitted = m.frontier->Admit(std::move(entries), *m.filter);
    if (!admitted.ok()) return admitted.status();
    m.CountSkip(&CrawlSummary::duplicates, admitted->duplicates + admitted->refused_full);
    if (admitted->admitted > 0) {
      // Each new URL was checked at the filter's current FPR: the expected
      // number of new URLs wrongly taken as "seen" grows by about that much.
      std::lock_guard<std::mutex> lock(m.summary_mu);
      m.expected_false_seen += static_cast<double>(admitted->admitted) * m.last_fpr.load();
    }
    for (const std::string& host : admitted->new_hosts) {
      {
        std::lock_guard<std::mutex> lock(m.hosts_mu);
        m.hosts[host];
      }
      StartRobots(host, host + "/robots.txt", 0);
    }
    return Status::Ok();
  }

  Prepared Prepare(const Completed& c) const {
    Prepared p;
    const FetchResult& r = c.result;
    if (r.status > 0) p.warc = m.PrepareStore(r);
    bool html = r.content_type == "text/html" || r.content_type == "application/xhtml+xml";
    if (!c.robots && r.status >= 200 && r.status < 300 && html) {
      parsers::ExtractOptions eo;
      eo.include_assets = m.config.crawl.include_assets;
      eo.url = m.config.url;
      p.links = parsers::ExtractLinks(r.body, c.lease.entry.url, r.charset, eo);
    }
    return p;
  }

  Status FinishRobots(Completed& c, const Prepared& p) {
    FetchResult& r = c.result;
    m.Count(r);
    if (r.status > 0) {
      Status st = m.warc->Write(p.warc);
      if (!st.ok()) return st;
    }
    m.LogLine(r.url, r.status, &r, 0, "", r.error == FetchError::kNone ? "" : FetchErrorName(r.error), true);
    if (r.status >= 300 && r.status < 400 && !r.location.empty()) {
      if (c.hops < parsers::kMaxRobotsRedirects) {
        parsers::UrlResult next = parsers::ResolveHref(r.url, r.location, m.config.url);
        if (next.ok()) {
          StartRobots(c.host, next.url, c.hops + 1);
          return Status::Ok();
        }
      }
    }
    parsers::RobotsFetch outcome = parsers::RobotsFetch::kUnreachable;
    if (r.status >= 200 && r.status < 300) outcome = parsers::RobotsFetch::kOk;
    else if (r.status >= 300 && r.status < 400) outcome = parsers::RobotsFetch::kTooManyRedirects;
    else if (r.status >= 400 && r.status < 500) outcome = parsers::RobotsFetch::kClientError;
    else if (r.status >= 500) outcome = parsers::RobotsFetch::kServerError;
    parsers::Robots robots = parsers::Robots::ForFetch(outcome, r.body, m.config.crawl.user_agent);
    if (outcome == parsers::RobotsFetch::kServerError || outcome == parsers::RobotsFetch::kUnreachable) {
      spdlog::warn("{}: robots.txt {} (status {}): the host is treated as fully disallowed", c.host,
                   r.error == FetchError::kNone ? "unavailable" : FetchErrorName(r.error), r.status);
    }
    std::optional<double> delay = robots.crawl_delay();
    {
      std::lock_guard<std::mutex> lock(m.hosts_mu);
      HostState& h = m.hosts[c.host];
      h.robots = std::move(robots);
      h.robots_time = Clock::now();
      h.robots_done = true;
      h.robots_refreshing = false;
      h.robots_pending = false;
      h.robots_outcome = static_cast<uint8_t>(outcome);
      h.robots_body = outcome == parsers::RobotsFetch::kOk ? r.body.substr(0, kMaxRobotsBody) : "";
    }
    m.frontier->OpenHost(c.host, delay, Clock::now());
    return Status::Ok();
  }

  Status FinishPage(Completed& c, const Prepared& p) {
    FetchResult& r = c.result;
    const frontier::UrlEntry& e = c.lease.entry;
    m.frontier->Done(c.lease, Clock::now(), r.seconds);
    m.Count(r);
    if (r.status > 0) {
      Status st = m.warc->Write(p.warc);
      if (!st.ok()) return st;
    }
    m.LogLine(e.url, r.status, &r, e.depth, e.referrer,
              r.error == FetchError::kNone ? "" : FetchErrorName(r.error), false);
    if (r.error != FetchError::kNone) {
      spdlog::warn("{}: {} ({})", e.url, FetchErrorName(r.error), r.error_message);
    }

    std::vector<frontier::UrlEntry> next;
    uint64_t too_deep = 0, out_of_scope = 0;
    auto offer = [&](const std::string& url, uint32_t depth, uint32_t redirects) {
      if (depth > m.config.crawl.max_depth) {
        ++too_deep;
      } else if (!m.InScope(url)) {
        ++out_of_scope;
      } else {
        next.push_back(frontier::UrlEntry{url, depth, e.url, redirects});
      }
    };
    if (r.status >= 300 && r.status < 400 && !r.location.empty()) {
      // A redirect target is a URL like any other; the hop keeps the depth.
      if (e.redirects < m.config.fetch.max_redirects) {
        parsers::UrlResult target = parsers::ResolveHref(e.url, r.location, m.config.url);
        if (target.ok()) offer(target.url, e.depth, e.redirects + 1);
      } else {
        m.CountSkip(&CrawlSummary::too_many_redirects);
      }
    }
    if (!p.links.meta_nofollow) {
      for (const parsers::Link& l : p.links.links) {
        if (!l.nofollow) offer(l.url, e.depth + 1, 0);
      }
    }
    m.CountSkip(&CrawlSummary::too_deep, too_deep);
    m.CountSkip(&CrawlSummary::out_of_scope, out_of_scope);
    return Admit(std::move(next));
  }

  // Skips a popped URL (robots or the trap guard): a fetch-log line, no fetch.
  void Skip(const frontier::Lease& lease, const char* why, uint64_t CrawlSummary::*counter) {
    m.CountSkip(counter);
    m.LogLine(lease.entry.url, 0, nullptr, lease.entry.depth, lease.entry.referrer, why, false);
    m.frontier->Release(lease);
    m.busy.fetch_sub(1);
  }

  // Hands due URLs to the fetcher. Returns when the next URL becomes due, if
  // nothing could be started now.
  Result<std::optional<Clock::time_point>> StartFetches() {
    while (fetcher->Running() < max_running && !m.failed.load()) {
      if (m.max_pages_hit.load()) return std::optional<Clock::time_point>();
      Clock::time_point next_due{};
      auto popped = m.frontier->Pop(Clock::now(), &next_due);
      if (!popped.ok()) return popped.status();
      if (!popped.value()) {
        if (next_due != Clock::time_point{}) return std::optional<Clock::time_point>(next_due);
        return std::optional<Clock::time_point>();
      }
      m.busy.fetch_add(1);
      frontier::Lease lease = std::move(*popped.value());
      std::string path(lease.entry.url.substr(lease.host.size()));
      bool allowed = false, over_limit = false, refresh = false;
      {
        std::lock_guard<std::mutex> lock(m.hosts_mu);
        HostState& h = m.hosts[lease.host];
        allowed = h.robots.Allowed(path.empty() ? "/" : path);
        over_limit = h.fetched >= m.config.crawl.max_pages_per_host;
        if (allowed && !over_limit) ++h.fetched;
        auto age = std::chrono::duration<double>(Clock::now() - h.robots_time).count();
        if (h.robots_done && !h.robots_refreshing && age > m.config.fetch.robots_cache_s) {
          h.robots_refreshing = true;  // keep obeying the cached rules meanwhile
          refresh = true;
        }
      }
      if (refresh) StartRobots(lease.host, lease.host + "/robots.txt", 0);
      if (!allowed) {
        Skip(lease, "robots", &CrawlSummary::robots_blocked);
        continue;
      }
      if (over_limit) {
        Skip(lease, "max_pages_per_host", &CrawlSummary::trap_guard);
        continue;
      }
      uint64_t started_before = m.started.fetch_add(1);  // counted always: checkpoints keep it
      if (m.config.crawl.max_pages > 0 && started_before >= m.config.crawl.max_pages) {
        // Over the limit: this URL stays unfetched (and unlogged); stop starting.
        m.max_pages_hit = true;
        m.frontier->Release(lease);
        m.busy.fetch_sub(1);
        return std::optional<Clock::time_point>();
      }
      std::string url = lease.entry.url;
      auto shared = std::make_shared<frontier::Lease>(std::move(lease));
      fetcher->Add(url, [this, shared](FetchResult&& r) {
        completed.push_back(Completed{false, shared->host, 0, std::move(*shared), std::move(r)});
      });
    }
    return std::optional<Clock::time_point>();
  }

  // Results wait in one shared queue and any worker processes them, so the
  // parsing is spread over the threads even when one worker holds most of
  // the transfers (one big host). A worker processes one result at a time
  // between driving its own transfers, so those keep moving.
  void Loop(const std::atomic<bool>& stop) {
    while (!stop.load() && !m.failed.load()) {
      auto due = [&] {
        GateUnit unit(m.gate);
        return StartFetches();
      }();
      if (!due.ok()) return m.Fail(due.status());
      bool have_work = false;
      {
        std::lock_guard<std::mutex> lock(m.pending_mu);
        have_work = !m.pending.empty();
      }
      if (fetcher->Running() > 0) {
        fetcher->Run(std::chrono::milliseconds(have_work ? 0 : 20));
        if (!completed.empty()) {
          std::lock_guard<std::mutex> lock(m.pending_mu);
          for (Completed& c : completed) m.pending.push_back(std::move(c));
          completed.clear();
          have_work = true;
          m.pending_cv.notify_all();
        }
      }
      if (have_work) {
        std::optional<Completed> c;
        {
          std::lock_guard<std::mutex> lock(m.pending_mu);
          if (!m.pending.empty()) {
            c.emplace(std::move(m.pending.front()));
            m.pending.pop_front();
          }
        }
        if (c) {
          Prepared p = Prepare(*c);  // outside the gate: a checkpoint need not wait for it
          Status st = Status::Ok();
          {
            GateUnit unit(m.gate);
            st = c->robots ? FinishRobots(*c, p) : FinishPage(*c, p);
          }
          m.busy.fetch_sub(1);
          if (!st.ok()) return m.Fail(st);
        }
        continue;
      }
      if (fetcher->Running() == 0) {
        if (m.busy.load() == 0 && (m.frontier->Empty() || m.max_pages_hit.load())) break;
        // Nothing here: wait for a result to process, a host to become due
        // or another worker to queue URLs (at most 20 ms).
        auto cap = Clock::now() + std::chrono::milliseconds(20);
        std::unique_lock<std::mutex> lock(m.pending_mu);
        m.pending_cv.wait_until(lock, std::min(due.value().value_or(cap), cap),
                                [&] { return !m.pending.empty(); });
      }
    }
  }
};

namespace {

namespace json = boost::json;

// Everything but the dedup filter and the frontier's contents: shared by
// Create and Resume. `filter` is the one to use.
Result<std::unique_ptr<Crawl::Impl>> BuildImpl(const Config& config, const std::string& out_dir,
                                               std::unique_ptr<dedup::Filter> filter, int lock_fd);

}  // namespace

Crawl::Crawl(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Crawl::~Crawl() = default;

namespace {

Result<std::unique_ptr<Crawl::Impl>> BuildImpl(const Config& config, const std::string& out_dir,
                                               std::unique_ptr<dedup::Filter> filter, int lock_fd) {
  auto impl = std::make_unique<Crawl::Impl>();
  impl->lock_fd = lock_fd;
  impl->config = config;
  impl->out = out_dir;
  impl->filter = std::move(filter);
  if (const char* slow = std::getenv("CRAWLER_CHECKPOINT_SLOW_MS")) impl->slow_ms = std::atoi(slow);
  frontier::FrontierOptions fo = config.frontier;
  fo.spill_dir = out_dir + "/frontier";
  auto fr = frontier::Frontier::Create(fo);
  if (!fr.ok()) return fr.status();
  impl->frontier = std::move(fr).value();
  uint32_t n = config.crawl.workers != 0 ? config.crawl.workers
                                          : std::max(1u, std::thread::hardware_concurrency());
  n = std::min(n, config.crawl.max_connections);
  for (uint32_t i = 0; i < n; ++i) {
    FetchOptions fetch;
    fetch.user_agent = config.crawl.user_agent;
    fetch.connect_timeout_s = config.fetch.connect_timeout_s;
    fetch.timeout_s = config.fetch.timeout_s;
    fetch.low_speed_bytes = config.fetch.low_speed_bytes;
    fetch.low_speed_time_s = config.fetch.low_speed_time_s;
    fetch.max_body_bytes = config.fetch.max_body_bytes;
    // max_connections is the total: split it over the workers.
    size_t share = config.crawl.max_connections / n + (i < config.crawl.max_connections % n ? 1 : 0);
    fetch.max_connections = static_cast<uint32_t>(share);
    // Robots fetches come on top of the frontier's per-host transfers.
    fetch.max_connections_per_host = config.frontier.max_connections_per_host + 1;
    auto fetcher = Fetcher::Create(fetch);
    if (!fetcher.ok()) return fetcher.status();
    impl->workers.push_back(std::make_unique<Crawl::Impl::Worker>(*impl, std::move(fetcher).value(), share));
  }
  WarcOptions wo;
  wo.dir = out_dir + "/warc";
  wo.prefix = config.output.warc_prefix;
  wo.rotate_bytes = config.output.warc_rotate_bytes;
  wo.gzip_level = config.output.warc_gzip_level;
  wo.operator_info = config.crawl.user_agent;
  auto warc = WarcWriter::Open(wo);
  if (!warc.ok()) return warc.status();
  impl->warc = std::move(warc).value();
  impl->log_path = out_dir + "/fetch-log.jsonl";
  impl->log = std::fopen(impl->log_path.c_str(), "ab");
  if (impl->log == nullptr) {
    return Status::Error(Status::Code::kIoError, impl->log_path + ": open: " + std::strerror(errno));
  }
  std::string series_path = out_dir + "/stats-series.jsonl";
  impl->series = std::fopen(series_path.c_str(), "ab");
  if (impl->series == nullptr) {
    return Status::Error(Status::Code::kIoError, series_path + ": open: " + std::strerror(errno));
  }
  for (const std::string& re : config.crawl.include) impl->include.emplace_back(re);
  for (const std::string& re : config.crawl.exclude) impl->exclude.emplace_back(re);
  impl->summary.warc_dir = wo.dir;
  impl->summary.fetch_log = impl->log_path;
  return impl;
}

}  // namespace

Result<std::unique_ptr<Crawl>> Crawl::Create(const Config& config,
                                             const std::vector<std::string>& seeds,
                                             const std::string& out_dir) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return Status::Error(Status::Code::kIoError, out_dir + ": cannot create: " + ec.message());
  auto lock = LockOut(out_dir, 0);
  if (!lock.ok()) return lock.status();
  for (const char* dir : {kCheckpointDir, kCheckpointPrevDir}) {
    if (std::filesystem::exists(out_dir + "/" + dir)) {
      ::close(*lock);
      return Status::Error(Status::Code::kInvalidArgument,
                           out_dir + " already holds a crawl (" + dir +
                               "/): resume it with `crawler crawl --resume " + out_dir +
                               "` or choose another --out");
    }
  }
  auto filter = dedup::Filter::Create(config.dedup);
  if (!filter.ok()) {
    ::close(*lock);
    return filter.status().WithContext("dedup");
  }
  auto impl = BuildImpl(config, out_dir, std::move(filter).value(), *lock);
  if (!impl.ok()) return impl.status();
  Impl& m = **impl;
  m.seeds = seeds;
  m.scope_list = config.crawl.scope_hosts;
  if (config.crawl.scope_hosts.empty() && config.crawl.scope_domains.empty()) {
    for (const std::string& s : seeds) {
      std::string key(frontier::HostKey(s));
      if (std::find(m.scope_list.begin(), m.scope_list.end(), key) == m.scope_list.end()) {
        m.scope_list.push_back(key);
      }
    }
  }
  for (const std::string& h : m.scope_list) m.scope_hosts.insert(h);
  return std::unique_ptr<Crawl>(new Crawl(std::move(impl).value()));
}

const std::vector<std::string>& Crawl::ResumableKeys() {
  static const std::vector<std::string> keys = {
      "crawl.max_pages",        "crawl.workers",          "crawl.max_connections",
      "fetch.connect_timeout_s", "fetch.timeout_s",        "fetch.low_speed_bytes",
      "fetch.low_speed_time_s", "checkpoint.interval_s", "checkpoint.interval_pages"};
  return keys;
}

Result<std::unique_ptr<Crawl>> Crawl::Resume(const std::string& out_dir,
                                             const std::vector<std::string>& overrides,
                                             std::string* warning) {
  namespace fs = std::filesystem;
  auto bad = [](const std::string& m) { return Status::Error(Status::Code::kInvalidArgument, m); };
  for (const std::string& o : overrides) {
    std::string key = o.substr(0, o.find('='));
    const auto& allowed = ResumableKeys();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string list;
      for (const std::string& k : allowed) list += (list.empty() ? "" : ", ") + k;
      return bad("--set " + o + ": " + key +
                 " cannot be changed on --resume: the crawl keeps the config it was started with; "
                 "only limits may be overridden (" + list + ")");
    }
  }
  if (!fs::is_directory(out_dir)) return bad(out_dir + ": no such directory");
  const std::string cur = out_dir + "/" + kCheckpointDir, prev = out_dir + "/" + kCheckpointPrevDir;
  if (!fs::exists(cur) && !fs::exists(prev)) {
    return bad(out_dir + ": no checkpoint/ or checkpoint.prev/ here: not a crawl output directory, "
               "or the crawl never reached its first checkpoint");
  }
  auto lock = LockOut(out_dir, 10);
  if (!lock.ok()) return lock.status();
  auto fail = [&](Status st) {
    ::close(*lock);
    return st;
  };

  std::string first_problem;
  Result<LoadedCheckpoint> loaded = Status::Error(Status::Code::kIoError, "");
  bool fell_back = false;
  if (fs::exists(cur)) {
    loaded = LoadCheckpoint(cur);
    if (!loaded.ok()) first_problem = loaded.status().message();
  } else {
    first_problem = cur + ": missing (a crash between publishing steps)";
  }
  if (!loaded.ok()) {
    if (!fs::exists(prev)) {
      return fail(bad("cannot resume " + out_dir + ": " + first_problem + "; and there is no " + prev));
    }
    loaded = LoadCheckpoint(prev);
    if (!loaded.ok()) {
      return fail(bad("cannot resume " + out_dir + ": " + first_problem + "; and " + loaded.status().message()));
    }
    fell_back = true;
    *warning = first_problem + "; resuming from the previous checkpoint, " + prev;
  }
  LoadedCheckpoint& cp = *loaded;
  auto config = LoadConfig(cp.config_path, overrides);
  if (!config.ok()) return fail(config.status());

  // Repair: cut what was written after the checkpoint. Only now, with the
  // checkpoint fully loaded.
  auto cut = [&](const std::string& path, uint64_t bytes, bool must_exist) -> Status {
    std::error_code ec;
    uint64_t size = fs::exists(path, ec) ? fs::file_size(path, ec) : 0;
    if (ec) return Status::Error(Status::Code::kIoError, path + ": " + ec.message());
    if (size < bytes && (must_exist || size > 0)) {
      return bad(path + " is " + std::to_string(size) + " bytes but the checkpoint recorded " +
                 std::to_string(bytes) + ": it lost data after the checkpoint was taken; cannot resume safely");
    }
    if (size > bytes && ::truncate(path.c_str(), static_cast<off_t>(bytes)) != 0) {
      return Status::Error(Status::Code::kIoError, path + ": truncate: " + std::strerror(errno));
    }
    return Status::Ok();
  };
  const CheckpointInfo& info = cp.info;
  Status st = cut(out_dir + "/fetch-log.jsonl", info.fetch_log_bytes, info.fetch_log_bytes > 0);
  if (!st.ok()) return fail(st);
  st = cut(out_dir + "/warc/" + info.warc_file, info.warc_bytes, true);
  if (!st.ok()) return fail(st);
  st = cut(out_dir + "/stats-series.jsonl", info.series_bytes, false);
  if (!st.ok()) return fail(st);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(out_dir + "/warc", ec)) {
    std::string name = entry.path().filename().string();
    std::string prefix = config->output.warc_prefix + "-";
    unsigned index = 0;
    if (name.rfind(prefix, 0) == 0 && std::sscanf(name.c_str() + prefix.size(), "%u.warc.gz", &index) == 1 &&
        index > info.warc_index) {
      fs::remove(entry.path(), ec);  // written after the checkpoint
    }
  }
  fs::remove_all(out_dir + "/frontier", ec);
  fs::remove_all(out_dir + "/" + kCheckpointTmpDir, ec);
  if (fell_back && fs::exists(cur)) {
    fs::remove_all(out_dir + "/checkpoint.damaged", ec);
    fs::rename(cur, out_dir + "/checkpoint.damaged", ec);
  }

  auto impl = BuildImpl(*config, out_dir, std::move(cp.filter), *lock);
  if (!impl.ok()) return impl.status();
  Impl& m = **impl;
  m.scope_list = info.scope_hosts;
  for (const std::string& h : m.scope_list) m.scope_hosts.insert(h);
  m.summary = info.summary;
  m.summary.warc_dir = out_dir + "/warc";
  m.summary.fetch_log = m.log_path;
  m.summary.stopped = false;
  m.expected_false_seen = info.expected_false_seen;
  m.elapsed_base = info.elapsed_s;
  m.spilled_base = info.summary.spilled;
  m.sequence = info.sequence;
  m.last_checkpoint_pages = m.summary.fetched + m.summary.failed;

  auto now = Clock::now();
  std::unordered_map<std::string, uint64_t> leased_per_host;
  uint64_t leased = 0;
  for (const auto& [e, was_leased] : cp.urls) {
    if (was_leased) {
      ++leased_per_host[std::string(frontier::HostKey(e.url))];
      ++leased;
    }
  }
  for (auto& [image, host] : cp.hosts) {
    m.frontier->RestoreHost(image, now);
    Impl::HostState& h = m.hosts[image.key];
    uint64_t again = leased_per_host[image.key];
    h.fetched = host.fetched > again ? host.fetched - again : 0;
    if (host.robots_done) {
      auto outcome = static_cast<parsers::RobotsFetch>(host.robots_outcome);
      h.robots = parsers::Robots::ForFetch(outcome, host.robots_body, m.config.crawl.user_agent);
      h.robots_done = true;
      h.robots_outcome = host.robots_outcome;
      h.robots_body = std::move(host.robots_body);
      h.robots_time = now - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(host.robots_age_s));
    } else {
      std::string url = host.robots_pending && !host.robots_url.empty() ? host.robots_url : image.key + "/robots.txt";
      m.resume_robots.emplace_back(image.key, url, host.robots_pending ? host.robots_hops : 0);
    }
  }
  for (auto& [e, was_leased] : cp.urls) {
    st = m.frontier->Requeue(std::move(e));
    if (!st.ok()) return st;
  }
  m.started = info.started > leased ? info.started - leased : 0;
  spdlog::info("resumed from {} (checkpoint {}): {} URLs queued ({} were in flight), {} hosts", cp.dir,
               info.sequence, cp.urls.size(), leased, cp.hosts.size());
  if (fell_back) spdlog::warn("{}", *warning);
  return std::unique_ptr<Crawl>(new Crawl(std::move(impl).value()));
}

json::object Crawl::Impl::BuildStats(bool running) {
  CrawlProgress p;
  double expected = 0;
  {
    std::lock_guard<std::mutex> lock(summary_mu);
    p.summary = summary;
    expected = expected_false_seen;
  }
  auto now = Clock::now();
  p.frontier = frontier->Stats(now);
  dedup::FilterStats fs = filter->Stats();
  last_fpr = fs.estimated_fpr;

  json::object d;
  d["variant"] = dedup::FilterTypeName(fs.type);
  d["stripes"] = fs.stripes;
  d["layers_min"] = fs.layers_min;
  d["layers_max"] = fs.layers_max;
  d["items"] = fs.items;
  d["capacity"] = fs.capacity;
  d["bytes"] = fs.bytes;
  d["bits_per_item"] = fs.bits_per_item;
  d["fill"] = fs.fill;
  d["estimated_fpr"] = fs.estimated_fpr;
  d["fpr_bound"] = fs.fpr_bound;
  d["inserts_new"] = fs.inserts_new;
  d["inserts_duplicate"] = fs.inserts_duplicate;
  uint64_t checks = fs.inserts_new + fs.inserts_duplicate;
  d["duplicate_rate"] = checks ? static_cast<double>(fs.inserts_duplicate) / static_cast<double>(checks) : 0.0;
  d["expected_false_seen"] = expected;
  d["relocations"] = fs.relocations;
  d["saturations"] = fs.saturations;
  d["inserts_full"] = fs.inserts_full;
  std::vector<std::pair<double, size_t>> fullest;
  for (size_t i = 0; i < fs.per_stripe.size(); ++i) fullest.emplace_back(fs.per_stripe[i].fill, i);
  std::sort(fullest.begin(), fullest.end(), [](auto& a, auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  json::array top_stripes;
  for (size_t i = 0; i < std::min<size_t>(5, fullest.size()); ++i) {
    const dedup::StripeStats& st = fs.per_stripe[fullest[i].second];
    top_stripes.push_back(json::object{{"stripe", fullest[i].second}, {"fill", st.fill}, {"items", st.items},
                                       {"layers", st.layers}, {"estimated_fpr", st.estimated_fpr}});
  }
  d["fullest_stripes"] = std::move(top_stripes);

  json::object f;
  f["queued_memory"] = p.frontier.queued_memory;
  f["queued_disk"] = p.frontier.queued_disk;
  f["in_flight"] = p.frontier.in_flight;
  f["hosts"] = p.frontier.hosts;
  f["hosts_ready"] = p.frontier.hosts_ready;
  f["hosts_waiting_politeness"] = p.frontier.hosts_waiting_politeness;
  f["hosts_waiting_robots"] = p.frontier.hosts_waiting_robots;
  f["spilled"] = spilled_base + p.frontier.spilled;
  json::array depths;
  for (const auto& [depth, n] : p.frontier.depths) depths.push_back(json::object{{"depth", depth}, {"urls", n}});
  f["depths"] = std::move(depths);

  uint64_t blocked = 0;
  std::vector<std::pair<uint64_t, std::string>> top;
  {
    std::lock_guard<std::mutex> lock(hosts_mu);
    for (const auto& [key, h] : hosts) {
      auto o = static_cast<parsers::RobotsFetch>(h.robots_outcome);
      if (h.robots_done && (o == parsers::RobotsFetch::kServerError || o == parsers::RobotsFetch::kUnreachable)) ++blocked;
      top.emplace_back(h.fetched, key);
    }
  }
  f["hosts_blocked_robots"] = blocked;
  std::sort(top.begin(), top.end(), [](auto& a, auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  json::array top_hosts;
  for (size_t i = 0; i < std::min<size_t>(10, top.size()); ++i) {
    top_hosts.push_back(json::object{{"host", top[i].second}, {"fetched", top[i].first}});
  }

  const CrawlSummary& s = p.summary;
  json::object c = SummaryToJson(s);
  double elapsed = Elapsed();
  uint64_t pages = s.fetched + s.failed;
  c["pages"] = pages;
  c["elapsed_s"] = elapsed;
  c["pages_per_s"] = elapsed > 0 ? static_cast<double>(pages) / elapsed : 0.0;
  rate_samples.emplace_back(now, pages);
  while (rate_samples.size() > 1 && now - rate_samples.front().first > std::chrono::seconds(60)) rate_samples.pop_front();
  double window = std::chrono::duration<double>(now - rate_samples.front().first).count();
  c["pages_per_s_last_minute"] =
      window > 0.5 ? static_cast<double>(pages - rate_samples.front().second) / window : 0.0;
  c["top_hosts"] = std::move(top_hosts);

  json::object k;
  k["written"] = checkpoints_written;
  k["failed"] = checkpoints_failed;
  k["sequence"] = sequence;
  k["last_pause_ms"] = last_pause_ms;
  k["max_pause_ms"] = max_pause_ms;
  k["last_write_s"] = last_write_s;
  k["last_bytes"] = last_checkpoint_bytes;

  json::object report;
  report["version"] = 1;
  report["updated_unix"] = WallNow();
  report["running"] = running;
  report["out"] = out;
  report["dedup"] = std::move(d);
  report["frontier"] = std::move(f);
  report["crawl"] = std::move(c);
  report["checkpoint"] = std::move(k);
  return report;
}

void Crawl::Impl::WriteStats(bool running) {
  json::object s = BuildStats(running);
  std::string path = out + "/stats.json", tmp = path + ".tmp";
  std::string text = json::serialize(s) + "\n";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  bool ok = f != nullptr && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (f != nullptr) ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    spdlog::warn("{}: cannot write: {}", path, std::strerror(errno));
  }
  const json::object& d = s.at("dedup").as_object();
  const json::object& c = s.at("crawl").as_object();
  const json::object& fr = s.at("frontier").as_object();
  json::object point{{"t", Elapsed()},
                     {"pages", c.at("pages")},
                     {"pages_per_s", c.at("pages_per_s_last_minute")},
                     {"dedup_items", d.at("items")},
                     {"fpr", d.at("estimated_fpr")},
                     {"fpr_bound", d.at("fpr_bound")},
                     {"queued", fr.at("queued_memory").to_number<uint64_t>() + fr.at("queued_disk").to_number<uint64_t>()}};
  std::string line = json::serialize(point) + "\n";
  std::fputs(line.c_str(), series);
  std::fflush(series);
}

Status Crawl::Impl::StartCheckpoint(bool fork_writer) {
  auto t0 = Clock::now();
  if (fork_writer) gate.Close();
  CheckpointInfo info;
  CheckpointSources src;
  Status st = [&]() -> Status {
    frontier->RemoveDrained();  // no writer is reading them now
    {
      std::lock_guard<std::mutex> lock(log_mu);
      if (std::fflush(log) != 0) return Status::Error(Status::Code::kIoError, log_path + ": write: " + std::strerror(errno));
      long pos = std::ftell(log);
      if (pos < 0) return Status::Error(Status::Code::kIoError, log_path + ": tell: " + std::strerror(errno));
      info.fetch_log_bytes = static_cast<uint64_t>(pos);
      src.fsync_fd_log = fileno(log);
    }
    auto warc_pos = warc->Flush();
    if (!warc_pos.ok()) return warc_pos.status();
    info.warc_index = warc_pos->file_index;
    info.warc_file = std::filesystem::path(warc_pos->path).filename().string();
    info.warc_bytes = warc_pos->bytes;
    src.fsync_fd_warc = warc_pos->fd;
    std::fflush(series);
    long spos = std::ftell(series);
    info.series_bytes = spos > 0 ? static_cast<uint64_t>(spos) : 0;
    info.sequence = ++sequence;
    info.elapsed_s = Elapsed();
    info.config_toml = ConfigToToml(config);
    info.scope_hosts = scope_list;
    {
      std::lock_guard<std::mutex> lock(summary_mu);
      info.summary = summary;
      info.expected_false_seen = expected_false_seen;
    }
    info.summary.spilled = spilled_base + frontier->Stats(Clock::now()).spilled;
    info.started = started.load();
    info.pause_ms = last_pause_ms;
    info.stats = BuildStats(fork_writer);
    return Status::Ok();
  }();
  if (!st.ok()) {
    if (fork_writer) gate.Open();
    return st;
  }
  src.filter = filter.get();
  src.frontier = frontier.get();
  src.host = [this](const std::string& key) { return HostForCheckpoint(key); };
  src.cut = Clock::now();
  src.slow_ms = slow_ms;
  last_checkpoint = Clock::now();
  last_checkpoint_pages = info.summary.fetched + info.summary.failed;

  if (!fork_writer || !kForkWriter) {
    auto written = WriteCheckpoint(out, info, src);
    if (fork_writer) {
      gate.Open();
      last_pause_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      max_pause_ms = std::max(max_pause_ms, last_pause_ms);
    }
    if (!written.ok()) {
      ++checkpoints_failed;
      return written.status();
    }
    ++checkpoints_written;
    last_write_s = written->seconds;
    last_checkpoint_bytes = written->bytes;
    spdlog::info("checkpoint {} written in-process: {:.1f} MB in {:.3f} s", info.sequence,
                 static_cast<double>(written->bytes) / 1e6, written->seconds);
    return Status::Ok();
  }

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    gate.Open();
    return Status::Error(Status::Code::kIoError, std::string("checkpoint: pipe: ") + std::strerror(errno));
  }
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    // The child: a frozen copy of the crawl at the cut. No logging, no
    // threads; it dies with the crawler (a kill -9 of the crawler is a
    // crash during the write, which the publish protocol survives).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(3);
    ::close(fds[0]);
    auto written = WriteCheckpoint(out, info, src);
    std::string msg = written.ok() ? "ok " + std::to_string(written->bytes) + " " + std::to_string(written->seconds)
                                   : "error " + written.status().message();
    ssize_t ignored = ::write(fds[1], msg.data(), std::min<size_t>(msg.size(), 4000));
    (void)ignored;
    ::_exit(written.ok() ? 0 : 1);
  }
  ::close(fds[1]);
  gate.Open();
  double pause = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (pid < 0) {
    ::close(fds[0]);
    return Status::Error(Status::Code::kIoError, std::string("checkpoint: fork: ") + std::strerror(errno));
  }
  child = pid;
  child_pipe = fds[0];
  child_pause_ms = pause;
  last_pause_ms = pause;
  max_pause_ms = std::max(max_pause_ms, pause);
  return Status::Ok();
}

void Crawl::Impl::PollCheckpoint(bool wait) {
  if (child <= 0) return;
  int status = 0;
  pid_t r = ::waitpid(child, &status, wait ? 0 : WNOHANG);
  if (r == 0) return;
  std::string msg;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(child_pipe, buf, sizeof(buf))) > 0) msg.append(buf, static_cast<size_t>(n));
  ::close(child_pipe);
  child_pipe = -1;
  child = -1;
  unsigned long long bytes = 0;
  double seconds = 0;
  if (r > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
      std::sscanf(msg.c_str(), "ok %llu %lf", &bytes, &seconds) == 2) {
    ++checkpoints_written;
    last_write_s = seconds;
    last_checkpoint_bytes = bytes;
    spdlog::info("checkpoint {} written: {:.1f} MB in {:.3f} s (workers paused {:.1f} ms)", sequence,
                 static_cast<double>(bytes) / 1e6, seconds, child_pause_ms);
  } else {
    ++checkpoints_failed;
    spdlog::error("checkpoint {} failed: {} (the previous checkpoint stays valid)", sequence,
                  msg.empty() ? "the writer died" : msg);
  }
}

Result<CrawlSummary> Crawl::Run(const std::atomic<bool>& stop, const ProgressFn& progress,
                                std::atomic<bool>* checkpoint_request) {
  Impl& m = *impl_;
  auto start = Clock::now();
  m.run_start = start;
  m.last_checkpoint = start;
  m.BuildStats(true);  // primes last_fpr
  if (m.resume_robots.empty() && !m.seeds.empty()) {
    std::vector<frontier::UrlEntry> seeds;
    for (const std::string& s : m.seeds) seeds.push_back(frontier::UrlEntry{s, 0, "", 0});
    // Before the threads start: worker 0 fetches the seeds' robots.txt files.
    Status st = m.workers[0]->Admit(std::move(seeds));
    if (!st.ok()) return st;
    m.seeds.clear();
    // Checkpoint 1, before any page: a crash at any later moment resumes.
    st = m.StartCheckpoint(false);
    if (!st.ok()) return st;
  }
  for (const auto& [host, url, hops] : m.resume_robots) m.workers[0]->StartRobots(host, url, static_cast<int>(hops));
  m.resume_robots.clear();
  std::vector<std::thread> threads;
  for (auto& w : m.workers) {
    threads.emplace_back([&w, &stop] {
      w->Loop(stop);
      w->done = true;
    });
  }
  auto last_progress = Clock::now(), last_stats = Clock::now();
  const CheckpointConfig& cc = m.config.checkpoint;
  while (true) {
    bool all_done = true;
    for (auto& w : m.workers) all_done = all_done && w->done.load();
    if (all_done) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    m.PollCheckpoint(false);
    auto now = Clock::now();
    bool requested = checkpoint_request != nullptr && checkpoint_request->exchange(false);
    bool by_time = cc.interval_s > 0 && now - m.last_checkpoint >= std::chrono::duration<double>(cc.interval_s);
    bool by_pages = cc.interval_pages > 0 && m.PagesDone() - m.last_checkpoint_pages >= cc.interval_pages;
    if (m.child <= 0 && !stop.load() && (requested || by_time || by_pages)) {
      Status st = m.StartCheckpoint(true);
      if (!st.ok()) {
        ++m.checkpoints_failed;
        spdlog::error("checkpoint failed: {} (the previous checkpoint stays valid)", st.message());
      }
    }
    if (now - last_stats >= std::chrono::seconds(2)) {
      last_stats = now;
      m.WriteStats(true);
    }
    if (progress && now - last_progress >= std::chrono::seconds(1)) {
      last_progress = now;
      progress(Progress());
    }
  }
  for (std::thread& t : threads) t.join();
  m.PollCheckpoint(true);
  if (m.failed.load()) {
    std::lock_guard<std::mutex> lock(m.error_mu);
    return m.first_error;
  }
  {
    std::lock_guard<std::mutex> lock(m.log_mu);
    if (std::fflush(m.log) != 0) {
      return Status::Error(Status::Code::kIoError, m.log_path + ": write: " + std::strerror(errno));
    }
  }
  Status st = m.warc->Sync();
  if (!st.ok()) return st;
  {
    std::lock_guard<std::mutex> slock(m.summary_mu);
    m.summary.stopped = stop.load() || m.max_pages_hit.load();
    m.summary.spilled = m.spilled_base + m.frontier->Stats(Clock::now()).spilled;
    m.summary.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  }
  // The last act: a checkpoint of the final state (resumable after a stop).
  m.WriteStats(false);
  st = m.StartCheckpoint(false);
  if (!st.ok()) return st;
  m.WriteStats(false);
  std::lock_guard<std::mutex> slock(m.summary_mu);
  return m.summary;
}

CrawlProgress Crawl::Progress() const {
  const Impl& m = *impl_;
  CrawlProgress p;
  {
    std::lock_guard<std::mutex> lock(const_cast<std::mutex&>(m.summary_mu));
    p.summary = m.summary;
  }
  p.frontier = m.frontier->Stats(Clock::now());
  dedup::FilterStats fs = m.filter->Stats();
  p.dedup_items = fs.items;
  p.dedup_fpr = fs.estimated_fpr;
  p.dedup_bytes = fs.bytes;
  return p;
}

}  // namespace crawler::engine
