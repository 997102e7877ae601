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

}  // namespace

struct Crawl::Impl {
  struct HostState {
    parsers::Robots robots;
    Clock::time_point robots_time{};
    bool robots_done = false;
    bool robots_refreshing = false;
    uint64_t fetched = 0;
  };
  struct Completed {
    bool robots = false;
    std::string host;         // robots: the host the robots.txt is for
    int hops = 0;             // robots: redirects followed so far
    frontier::Lease lease;    // pages
    FetchResult result;
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

  ~Impl() {
    if (log != nullptr) std::fclose(log);
  }

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
    std::fputs(line.c_str(), log);
  }

  Status Store(const FetchResult& r) {
    Exchange ex;
    ex.url = r.url;
    ex.ip = r.ip;
    ex.date = std::chrono::system_clock::now();
    ex.request = r.request_head;
    ex.response_head = HeadForStoredBody(r.response_head, r.body.size());
    ex.body = r.body;
    ex.truncated = r.truncated;
    return warc->Write(ex);
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
    fetcher->Add(url, [this, host, hops](FetchResult&& r) {
      completed.push_back(Completed{true, host, hops, {}, std::move(r)});
    });
  }

  Status Admit(std::vector<frontier::UrlEntry> entries) {
    if (entries.empty()) return Status::Ok();
    auto admitted = m.frontier->Admit(std::move(entries), *m.filter);
    if (!admitted.ok()) return admitted.status();
    m.CountSkip(&CrawlSummary::duplicates, admitted->duplicates + admitted->refused_full);
    for (const std::string& host : admitted->new_hosts) {
      {
        std::lock_guard<std::mutex> lock(m.hosts_mu);
        m.hosts[host];
      }
      StartRobots(host, host + "/robots.txt", 0);
    }
    return Status::Ok();
  }

  Status FinishRobots(Completed& c) {
    FetchResult& r = c.result;
    m.Count(r);
    if (r.status > 0) {
      Status st = m.Store(r);
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
    }
    m.frontier->OpenHost(c.host, delay, Clock::now());
    return Status::Ok();
  }

  Status FinishPage(Completed& c) {
    FetchResult& r = c.result;
    const frontier::UrlEntry& e = c.lease.entry;
    m.frontier->Done(c.lease, Clock::now(), r.seconds);
    m.Count(r);
    if (r.status > 0) {
      Status st = m.Store(r);
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
    bool html = r.content_type == "text/html" || r.content_type == "application/xhtml+xml";
    if (r.status >= 200 && r.status < 300 && html) {
      parsers::ExtractOptions eo;
      eo.include_assets = m.config.crawl.include_assets;
      eo.url = m.config.url;
      parsers::ExtractResult links = parsers::ExtractLinks(r.body, e.url, r.charset, eo);
      if (!links.meta_nofollow) {
        for (const parsers::Link& l : links.links) {
          if (!l.nofollow) offer(l.url, e.depth + 1, 0);
        }
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
      if (m.config.crawl.max_pages > 0 && m.started.fetch_add(1) >= m.config.crawl.max_pages) {
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
      auto due = StartFetches();
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
          Status st = c->robots ? FinishRobots(*c) : FinishPage(*c);
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

Crawl::Crawl(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Crawl::~Crawl() = default;

Result<std::unique_ptr<Crawl>> Crawl::Create(const Config& config,
                                             const std::vector<std::string>& seeds,
                                             const std::string& out_dir) {
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->out = out_dir;
  impl->seeds = seeds;
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return Status::Error(Status::Code::kIoError, out_dir + ": cannot create: " + ec.message());

  auto filter = dedup::Filter::Create(config.dedup);
  if (!filter.ok()) return filter.status().WithContext("dedup");
  impl->filter = std::move(filter).value();
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
    impl->workers.push_back(std::make_unique<Impl::Worker>(*impl, std::move(fetcher).value(), share));
  }
  WarcOptions wo;
  wo.dir = out_dir + "/warc";
  wo.prefix = config.output.warc_prefix;
  wo.rotate_bytes = config.output.warc_rotate_bytes;
  wo.operator_info = config.crawl.user_agent;
  auto warc = WarcWriter::Open(wo);
  if (!warc.ok()) return warc.status();
  impl->warc = std::move(warc).value();
  impl->log_path = out_dir + "/fetch-log.jsonl";
  impl->log = std::fopen(impl->log_path.c_str(), "ab");
  if (impl->log == nullptr) {
    return Status::Error(Status::Code::kIoError, impl->log_path + ": open: " + std::strerror(errno));
  }
  for (const std::string& h : config.crawl.scope_hosts) impl->scope_hosts.insert(h);
  if (config.crawl.scope_hosts.empty() && config.crawl.scope_domains.empty()) {
    for (const std::string& s : seeds) impl->scope_hosts.insert(std::string(frontier::HostKey(s)));
  }
  for (const std::string& re : config.crawl.include) impl->include.emplace_back(re);
  for (const std::string& re : config.crawl.exclude) impl->exclude.emplace_back(re);
  impl->summary.warc_dir = wo.dir;
  impl->summary.fetch_log = impl->log_path;
  return std::unique_ptr<Crawl>(new Crawl(std::move(impl)));
}

Result<CrawlSummary> Crawl::Run(const std::atomic<bool>& stop, const ProgressFn& progress) {
  Impl& m = *impl_;
  auto start = Clock::now();
  std::vector<frontier::UrlEntry> seeds;
  for (const std::string& s : m.seeds) seeds.push_back(frontier::UrlEntry{s, 0, "", 0});
  // Before the threads start: worker 0 fetches the seeds' robots.txt files.
  Status st = m.workers[0]->Admit(std::move(seeds));
  if (!st.ok()) return st;
  std::vector<std::thread> threads;
  for (auto& w : m.workers) {
    threads.emplace_back([&w, &stop] {
      w->Loop(stop);
      w->done = true;
    });
  }
  auto last_progress = Clock::now();
  while (true) {
    bool all_done = true;
    for (auto& w : m.workers) all_done = all_done && w->done.load();
    if (all_done) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (progress && Clock::now() - last_progress >= std::chrono::seconds(1)) {
      last_progress = Clock::now();
      progress(Progress());
    }
  }
  for (std::thread& t : threads) t.join();
  if (m.failed.load()) {
    std::lock_guard<std::mutex> lock(m.error_mu);
    return m.first_error;
  }
  std::lock_guard<std::mutex> lock(m.log_mu);
  if (std::fflush(m.log) != 0) {
    return Status::Error(Status::Code::kIoError, m.log_path + ": write: " + std::strerror(errno));
  }
  st = m.warc->Sync();
  if (!st.ok()) return st;
  std::lock_guard<std::mutex> slock(m.summary_mu);
  m.summary.stopped = stop.load() || m.max_pages_hit.load();
  m.summary.spilled = m.frontier->Stats(Clock::now()).spilled;
  m.summary.seconds = std::chrono::duration<double>(Clock::now() - start).count();
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
