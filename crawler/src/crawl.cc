// One crawl; see crawler/crawl.h.
#include "crawler/crawl.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

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
    bool robots_done = false;
    parsers::Robots robots;
    uint64_t fetched = 0;
  };
  struct Completed {
    bool robots = false;
    std::string host;         // robots: the host the robots.txt is for
    int hops = 0;             // robots: redirects followed so far
    frontier::Lease lease;    // pages
    FetchResult result;
  };

  Config config;
  std::string out;
  std::unique_ptr<dedup::Filter> filter;
  std::unique_ptr<frontier::Frontier> frontier;
  std::unique_ptr<Fetcher> fetcher;
  std::unique_ptr<WarcWriter> warc;
  std::FILE* log = nullptr;
  std::string log_path;
  std::vector<std::string> seeds;
  std::unordered_set<std::string> scope_hosts;  // host keys or bare host names
  std::vector<std::regex> include, exclude;
  std::unordered_map<std::string, HostState> hosts;
  std::vector<Completed> completed;
  int robots_in_flight = 0;
  uint64_t started = 0;
  CrawlSummary summary;

  ~Impl() {
    if (log != nullptr) std::fclose(log);
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
    std::fputs(line.c_str(), log);
  }

  void StartRobots(const std::string& host, const std::string& url, int hops) {
    ++robots_in_flight;
    fetcher->Add(url, [this, host, hops](FetchResult&& r) {
      completed.push_back(Completed{true, host, hops, {}, std::move(r)});
    });
  }

  Status Admit(std::vector<frontier::UrlEntry> entries) {
    if (entries.empty()) return Status::Ok();
    auto admitted = frontier->Admit(std::move(entries), *filter);
    if (!admitted.ok()) return admitted.status();
    summary.duplicates += admitted->duplicates + admitted->refused_full;
    for (const std::string& host : admitted->new_hosts) {
      hosts[host];
      StartRobots(host, host + "/robots.txt", 0);
    }
    return Status::Ok();
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
    if (r.status == 0) {
      ++summary.failed;
      return;
    }
    ++summary.fetched;
    summary.bytes += r.body.size();
    summary.truncated += r.truncated ? 1 : 0;
    long c = r.status / 100;
    (c == 2 ? summary.status_2xx : c == 3 ? summary.status_3xx : c == 4 ? summary.status_4xx
                                                                         : summary.status_5xx)++;
  }

  Status FinishRobots(Completed& c) {
    --robots_in_flight;
    FetchResult& r = c.result;
    Count(r);
    if (r.status > 0) {
      Status st = Store(r);
      if (!st.ok()) return st;
    }
    LogLine(r.url, r.status, &r, 0, "", r.error == FetchError::kNone ? "" : FetchErrorName(r.error), true);
    if (r.status >= 300 && r.status < 400 && !r.location.empty()) {
      if (c.hops < parsers::kMaxRobotsRedirects) {
        parsers::UrlResult next = parsers::ResolveHref(r.url, r.location, config.url);
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
    HostState& h = hosts[c.host];
    h.robots = parsers::Robots::ForFetch(outcome, r.body, config.crawl.user_agent);
    h.robots_done = true;
    frontier->OpenHost(c.host, h.robots.crawl_delay());
    return Status::Ok();
  }

  Status FinishPage(Completed& c) {
    FetchResult& r = c.result;
    const frontier::UrlEntry& e = c.lease.entry;
    frontier->Done(c.lease, Clock::now(), r.seconds);
    Count(r);
    if (r.status > 0) {
      Status st = Store(r);
      if (!st.ok()) return st;
    }
    LogLine(e.url, r.status, &r, e.depth, e.referrer,
            r.error == FetchError::kNone ? "" : FetchErrorName(r.error), false);

    std::vector<frontier::UrlEntry> next;
    auto offer = [&](const std::string& url, uint32_t depth) {
      if (depth > config.crawl.max_depth) {
        ++summary.too_deep;
      } else if (!InScope(url)) {
        ++summary.out_of_scope;
      } else {
        next.push_back(frontier::UrlEntry{url, depth, e.url});
      }
    };
    if (r.status >= 300 && r.status < 400 && !r.location.empty()) {
      // A redirect target is a URL like any other; the hop keeps the depth.
      parsers::UrlResult target = parsers::ResolveHref(e.url, r.location, config.url);
      if (target.ok()) offer(target.url, e.depth);
    }
    bool html = r.content_type == "text/html" || r.content_type == "application/xhtml+xml";
    if (r.status >= 200 && r.status < 300 && html) {
      parsers::ExtractOptions eo;
      eo.include_assets = config.crawl.include_assets;
      eo.url = config.url;
      parsers::ExtractResult links = parsers::ExtractLinks(r.body, e.url, r.charset, eo);
      if (!links.meta_nofollow) {
        for (const parsers::Link& l : links.links) {
          if (!l.nofollow) offer(l.url, e.depth + 1);
        }
      }
    }
    return Admit(std::move(next));
  }

  // Hands due URLs to the fetcher. Returns when the next URL becomes due, if
  // nothing could be started now.
  Result<std::optional<Clock::time_point>> StartFetches() {
    while (fetcher->Running() < config.crawl.max_connections) {
      if (config.crawl.max_pages > 0 && started >= config.crawl.max_pages) {
        summary.stopped = true;
        return std::optional<Clock::time_point>();
      }
      Clock::time_point next_due{};
      auto popped = frontier->Pop(Clock::now(), &next_due);
      if (!popped.ok()) return popped.status();
      if (!popped.value()) {
        if (next_due != Clock::time_point{}) return std::optional<Clock::time_point>(next_due);
        return std::optional<Clock::time_point>();
      }
      frontier::Lease lease = std::move(*popped.value());
      HostState& h = hosts[lease.host];
      std::string path(lease.entry.url.substr(lease.host.size()));
      if (!h.robots.Allowed(path.empty() ? "/" : path)) {
        ++summary.robots_blocked;
        LogLine(lease.entry.url, 0, nullptr, lease.entry.depth, lease.entry.referrer, "robots", false);
        frontier->Release(lease);
        continue;
      }
      if (h.fetched >= config.crawl.max_pages_per_host) {
        ++summary.trap_guard;
        LogLine(lease.entry.url, 0, nullptr, lease.entry.depth, lease.entry.referrer,
                "max_pages_per_host", false);
        frontier->Release(lease);
        continue;
      }
      ++h.fetched;
      ++started;
      std::string url = lease.entry.url;
      auto shared = std::make_shared<frontier::Lease>(std::move(lease));
      fetcher->Add(url, [this, shared](FetchResult&& r) {
        completed.push_back(Completed{false, shared->host, 0, std::move(*shared), std::move(r)});
      });
    }
    return std::optional<Clock::time_point>();
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
  FetchOptions fetch;
  fetch.user_agent = config.crawl.user_agent;
  fetch.connect_timeout_s = config.fetch.connect_timeout_s;
  fetch.timeout_s = config.fetch.timeout_s;
  fetch.low_speed_bytes = config.fetch.low_speed_bytes;
  fetch.low_speed_time_s = config.fetch.low_speed_time_s;
  fetch.max_body_bytes = config.fetch.max_body_bytes;
  fetch.max_connections = config.crawl.max_connections;
  // Robots fetches come on top of the frontier's per-host transfers.
  fetch.max_connections_per_host = config.frontier.max_connections_per_host + 1;
  auto fetcher = Fetcher::Create(fetch);
  if (!fetcher.ok()) return fetcher.status();
  impl->fetcher = std::move(fetcher).value();
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

Result<CrawlSummary> Crawl::Run(const std::atomic<bool>& stop) {
  Impl& m = *impl_;
  auto start = Clock::now();
  std::vector<frontier::UrlEntry> seeds;
  for (const std::string& s : m.seeds) seeds.push_back(frontier::UrlEntry{s, 0, ""});
  Status st = m.Admit(std::move(seeds));
  if (!st.ok()) return st;
  while (!stop.load()) {
    auto due = m.StartFetches();
    if (!due.ok()) return due.status();
    if (m.fetcher->Running() == 0) {
      if (m.summary.stopped || (m.frontier->Empty() && m.robots_in_flight == 0)) break;
      // Nothing in flight: sleep until the next host is due (at most 50 ms).
      auto wake = std::min(due.value().value_or(Clock::now() + std::chrono::milliseconds(50)),
                           Clock::now() + std::chrono::milliseconds(50));
      std::this_thread::sleep_until(wake);
      continue;
    }
    m.fetcher->Run(std::chrono::milliseconds(50));
    std::vector<Impl::Completed> done;
    done.swap(m.completed);
    for (Impl::Completed& c : done) {
      st = c.robots ? m.FinishRobots(c) : m.FinishPage(c);
      if (!st.ok()) return st;
    }
    if (m.summary.stopped && m.fetcher->Running() == 0) break;
  }
  if (stop.load()) m.summary.stopped = true;
  std::fflush(m.log);
  st = m.warc->Sync();
  if (!st.ok()) return st;
  m.summary.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return m.summary;
}

}  // namespace crawler::engine
