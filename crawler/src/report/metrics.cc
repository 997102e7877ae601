// See metrics.h.
#include "report/metrics.h"

#include <spdlog/spdlog.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <string_view>

#include "crawler/version.h"

namespace crawler::report {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// The text format: # HELP and # TYPE once per family, then its samples.
class Text {
 public:
  void Family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  // `labels`: name="value" pairs, values escaped by Label.
  template <typename T>
  void Sample(std::string_view name, const std::string& labels, T value) {
    out_ += name;
    if (!labels.empty()) out_ += "{" + labels + "}";
    out_ += ' ';
    out_ += fmt::format("{}", value);
    out_ += '\n';
  }
  template <typename T>
  void One(std::string_view name, std::string_view type, std::string_view help, T value) {
    Family(name, type, help);
    Sample(name, "", value);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

std::string Label(std::string_view name, std::string_view value) {
  std::string out(name);
  out += "=\"";
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  out += '"';
  return out;
}

// Losses (CrawlCounts::lost): URLs and hosts no server answered for.
void LossFamilies(const engine::CrawlCounts& c, Text& t) {
  t.Family("crawler_urls_lost_total", "counter",
           "URLs in scope no server answered for (given up, or their host's robots.txt "
           "had no answer), by the failure's kind; a crawl ending with any exits 3.");
  for (const auto& [kind, n] : c.lost)
    t.Sample("crawler_urls_lost_total", Label("kind", kind), n);
  t.Family("crawler_hosts_lost_total", "counter",
           "Hosts whose robots.txt had no answer after its retries, by kind.");
  for (const auto& [kind, n] : c.lost_hosts)
    t.Sample("crawler_hosts_lost_total", Label("kind", kind), n);
}

// [browser] render (docs/rendering.md).
void RenderFamilies(const engine::CrawlCounts& c, Text& t) {
  t.One("crawler_pages_rendered_total", "counter",
        "Pages rendered in the browser ([browser] render).", c.rendered);
  t.One("crawler_render_failures_total", "counter",
        "Pages the browser gave up (recorded as fetched).", c.render_failed);
  t.One("crawler_render_resources_total", "counter",
        "The browser's responses archived with rendered pages.", c.render_resources);
}

void CrawlFamilies(const StatsReport& r, Text& t) {
  const engine::CrawlCounts& c = r.crawl;
  t.One("crawler_running", "gauge", "1 while the crawl runs, 0 once it has ended.",
        r.running ? 1 : 0);
  t.Family("crawler_pages_total", "counter", "Responses received, by status class.");
  t.Sample("crawler_pages_total", Label("class", "2xx"), c.status_2xx);
  t.Sample("crawler_pages_total", Label("class", "3xx"), c.status_3xx);
  t.Sample("crawler_pages_total", Label("class", "4xx"), c.status_4xx);
  t.Sample("crawler_pages_total", Label("class", "5xx"), c.status_5xx);
  t.Family("crawler_fetched_bytes_total", "counter",
           "Body bytes received (decoded), by status class.");
  t.Sample("crawler_fetched_bytes_total", Label("class", "2xx"), c.bytes_2xx);
  t.Sample("crawler_fetched_bytes_total", Label("class", "3xx"), c.bytes_3xx);
  t.Sample("crawler_fetched_bytes_total", Label("class", "4xx"), c.bytes_4xx);
  t.Sample("crawler_fetched_bytes_total", Label("class", "5xx"), c.bytes_5xx);
  t.One("crawler_fetch_failures_total", "counter",
        "Fetches that got no response (timeouts, refused, broken).", c.failed);
  t.Family("crawler_fetch_errors_total", "counter",
           "Failed or truncated fetches, by kind (as in the fetch log).");
  for (const auto& [kind, n] : c.errors)
    t.Sample("crawler_fetch_errors_total", Label("kind", kind), n);
  t.One("crawler_fetch_retries_total", "counter",
        "Failed attempts (transient) fetched again.", c.retries);
  t.One("crawler_urls_given_up_total", "counter",
        "URLs whose last allowed attempt failed transiently too.", c.gave_up);
  t.One("crawler_fetch_dns_deferred_total", "counter",
        "Attempts whose lookup failed (fetch.dns_retry_s), fetched again later.",
        c.dns_deferred);
  RenderFamilies(c, t);
  t.One("crawler_fetch_other_address_total", "counter",
        "Attempts whose address did not connect, fetched again at the host's next "
        "address.",
        c.other_address);
  t.Family("crawler_urls_forgotten_total", "counter",
           "URLs given up or over max_pages_per_host: erased from the dedup filter "
           "(a later link admits them again), or kept by a filter that cannot erase.");
  t.Sample("crawler_urls_forgotten_total", Label("result", "erased"), c.forgotten);
  t.Sample("crawler_urls_forgotten_total", Label("result", "cannot_forget"),
           c.cannot_forget);
  t.Family("crawler_revisits_total", "counter",
           "Revisits ([recrawl]) by outcome: not_modified (304) and identical (the "
           "earlier payload digest) are WARC revisit records, changed a new capture.");
  t.Sample("crawler_revisits_total", Label("result", "not_modified"),
           c.revisits_not_modified);
  t.Sample("crawler_revisits_total", Label("result", "identical"), c.revisits_identical);
  t.Sample("crawler_revisits_total", Label("result", "changed"), c.revisits_changed);
  t.One("crawler_revisit_bytes_saved_total", "counter",
        "Payload bytes of unchanged revisited pages not stored again.",
        c.revisit_bytes_saved);
  t.One("crawler_payload_revisits_total", "counter",
        "200s written as revisit records of an earlier capture of the same payload, "
        "at any URL (dedup.payload).",
        c.payload_revisits);
  t.One("crawler_payload_bytes_saved_total", "counter",
        "Payload bytes of those responses, not stored again (dedup.payload).",
        c.payload_bytes_saved);
  t.Family("crawler_urls_dropped_total", "counter",
           "Links and redirect targets not admitted, by reason.");
  const std::pair<const char*, uint64_t> dropped[] = {
      {"duplicate", c.duplicates},
      {"out_of_scope", c.out_of_scope},
      {"too_deep", c.too_deep},
      {"trap_guard", c.trap_guard},
      {"filter_full", c.filter_full},
      {"too_many_redirects", c.too_many_redirects},
      {"robots_blocked", c.robots_blocked},
      {"unresolved", c.unresolved}};
  for (const auto& [reason, n] : dropped)
    t.Sample("crawler_urls_dropped_total", Label("reason", reason), n);
  // The trap guards and domain budgets (engine/url_guards.h, domain_budgets.h).
  for (const auto& [reason, n] : c.guarded)
    t.Sample("crawler_urls_dropped_total", Label("reason", reason), n);
  t.One("crawler_crawl_elapsed_seconds", "gauge", "Crawl time over all runs.",
        r.rates.elapsed_s);
  t.One("crawler_pages_per_second", "gauge", "Pages per second over the last minute.",
        r.rates.pages_per_s_last_minute);
}

// [recrawl]: the URL history by interval, and the due backlog.
void RecrawlFamilies(const StatsReport& r, Text& t) {
  const engine::CrawlCounts& c = r.crawl;
  if (r.recrawl.enabled) {
    t.Family("crawler_history_urls", "gauge",
             "URLs in the URL history ([recrawl]), by revisit interval (at most "
             "interval_le_s seconds).");
    for (const auto& [bucket, n] : c.revisit_intervals) {
      const uint64_t le = uint64_t{1} << std::stoi(bucket.substr(2));
      t.Sample("crawler_history_urls", Label("interval_le_s", std::to_string(le)), n);
    }
    t.One("crawler_recrawl_due_urls", "gauge",
          "URLs due for a revisit and not yet queued (counted up to 100,000).",
          r.recrawl.due);
  }
}

// The crawler's own DNS (crawler/resolver.h), when it resolves.
void DnsFamilies(const DnsReport& d, Text& t) {
  if (!d.enabled) return;
  t.One("crawler_dns_queries_total", "counter", "DNS lookups sent (refreshes included).",
        d.queries);
  t.Family("crawler_dns_cache_total", "counter",
           "Fetches whose host the DNS cache answered (hit); lookups started for want of "
           "a valid answer, waited for (miss).");
  t.Sample("crawler_dns_cache_total", Label("result", "hit"), d.hits);
  t.Sample("crawler_dns_cache_total", Label("result", "miss"), d.misses);
  t.Family("crawler_dns_failures_total", "counter", "DNS lookups that failed, by kind.");
  t.Sample("crawler_dns_failures_total", Label("kind", "not_found"), d.not_found);
  t.Sample("crawler_dns_failures_total", Label("kind", "failed"), d.failed);
  t.Sample("crawler_dns_failures_total", Label("kind", "timeout"), d.timeouts);
  t.One("crawler_dns_cache_entries", "gauge", "Host names in the DNS cache.", d.entries);
  t.Family("crawler_dns_latency_seconds", "gauge",
           "DNS lookup latency quantiles (answered lookups, within 19%).");
  t.Sample("crawler_dns_latency_seconds", Label("quantile", "0.5"),
           d.latency_p50_ms / 1000);
  t.Sample("crawler_dns_latency_seconds", Label("quantile", "0.99"),
           d.latency_p99_ms / 1000);
}

// [browser] render's pool (BrowserReport), when on.
void BrowserFamilies(const BrowserReport& b, Text& t) {
  if (!b.enabled) return;
  t.One("crawler_browsers_started_total", "counter",
        "Browsers started (restarts included).", b.started);
  t.One("crawler_browser_deaths_total", "counter", "Browsers found dead after a page.",
        b.deaths);
  t.One("crawler_browser_cpu_seconds_total", "counter",
        "CPU seconds of the browsers and their helper processes.", b.cpu_s);
  t.Family("crawler_render_seconds", "gauge",
           "A rendered page's time in the browser, quantiles (within 19%).");
  t.Sample("crawler_render_seconds", Label("quantile", "0.5"), b.render_p50_s);
  t.Sample("crawler_render_seconds", Label("quantile", "0.99"), b.render_p99_s);
}

// The resident set and the bytes each part holds (MemoryReport).
void MemoryFamilies(const MemoryReport& m, Text& t) {
  t.One("crawler_resident_bytes", "gauge", "The crawler's resident set size.", m.rss);
  t.Family("crawler_memory_bytes", "gauge",
           "Bytes held by each part of the crawl, counted from its structures; other: "
           "the resident set minus the parts.");
  const std::pair<const char*, uint64_t> parts[] = {
      {"filter", m.filter},
      {"frontier_urls", m.frontier_urls},
      {"frontier_hosts", m.frontier_hosts},
      {"frontier_addresses", m.frontier_addresses},
      {"host_table", m.host_table},
      {"dns", m.dns},
      {"scope", m.scope},
      {"robots_queue", m.robots_queue},
      {"bodies", m.bodies},
      {"other", m.other}};
  for (const auto& [part, bytes] : parts)
    t.Sample("crawler_memory_bytes", Label("part", part), bytes);
}

void FrontierFamilies(const FrontierReport& f, Text& t) {
  t.Family("crawler_frontier_urls", "gauge", "URLs queued, in RAM and on disk.");
  t.Sample("crawler_frontier_urls", Label("where", "memory"), f.queued_memory);
  t.Sample("crawler_frontier_urls", Label("where", "disk"), f.queued_disk);
  t.One("crawler_frontier_in_flight", "gauge", "URLs being fetched.", f.in_flight);
  t.One("crawler_frontier_spilled_urls_total", "counter",
        "URLs the frontier wrote to disk (its RAM bound).", f.spilled);
  t.One("crawler_frontier_hosts", "gauge", "Hosts the frontier knows.", f.hosts);
  t.One("crawler_frontier_addresses", "gauge",
        "Addresses the frontier's hosts are on (politeness per address).", f.addresses);
  t.Family("crawler_hosts", "gauge", "Hosts with queued URLs, by state.");
  t.Sample("crawler_hosts", Label("state", "ready"), f.hosts_ready);
  t.Sample("crawler_hosts", Label("state", "waiting_politeness"),
           f.hosts_waiting_politeness);
  t.Sample("crawler_hosts", Label("state", "waiting_ip"), f.hosts_waiting_ip);
  t.Sample("crawler_hosts", Label("state", "waiting_robots"), f.hosts_waiting_robots);
  t.Sample("crawler_hosts", Label("state", "blocked_robots"), f.hosts_blocked_robots);
  t.Family("crawler_hosts_backoff", "gauge",
           "Hosts slowed down after 429/503 (slowed) or parked after connect failures "
           "(parked).");
  t.Sample("crawler_hosts_backoff", Label("kind", "slowed"), f.hosts_backing_off);
  t.Sample("crawler_hosts_backoff", Label("kind", "parked"), f.hosts_parked);
}

void DedupFamilies(const DedupReport& d, Text& t) {
  t.One("crawler_dedup_items", "gauge", "URLs in the dedup filter.", d.items);
  t.One("crawler_dedup_capacity", "gauge", "URLs the filter holds at its FPR bound.",
        d.capacity);
  t.One("crawler_dedup_bytes", "gauge", "The filter's memory.", d.bytes);
  t.One("crawler_dedup_fill_ratio", "gauge", "The filter's fill.", d.fill);
  t.One("crawler_dedup_estimated_fpr", "gauge",
        "The filter's estimated false-positive rate now.", d.estimated_fpr);
  t.One("crawler_dedup_fpr_bound", "gauge", "The configured false-positive bound.",
        d.fpr_bound);
  t.One("crawler_dedup_expected_false_seen", "gauge",
        "Expected count of new URLs wrongly taken as seen (sum of the FPR at each).",
        d.expected_false_seen);
  t.Family("crawler_dedup_inserts_total", "counter", "Filter checks, by outcome.");
  t.Sample("crawler_dedup_inserts_total", Label("result", "new"), d.inserts_new);
  t.Sample("crawler_dedup_inserts_total", Label("result", "duplicate"),
           d.inserts_duplicate);
}

void CheckpointFamilies(const checkpoint::CheckpointFigures& c, Text& t) {
  t.Family("crawler_checkpoints_total", "counter", "Checkpoints, by outcome.");
  t.Sample("crawler_checkpoints_total", Label("result", "written"), c.written);
  t.Sample("crawler_checkpoints_total", Label("result", "failed"), c.failed);
  t.One("crawler_checkpoint_sequence", "gauge", "The last checkpoint's number.",
        c.sequence);
  t.One("crawler_checkpoint_last_duration_seconds", "gauge",
        "The last checkpoint's write (in the forked writer).", c.last_write_s);
  t.One("crawler_checkpoint_last_pause_seconds", "gauge",
        "The crawl's pause for the last checkpoint.", c.last_pause_ms / 1000);
  t.One("crawler_checkpoint_max_pause_seconds", "gauge",
        "The longest checkpoint pause of this run.", c.max_pause_ms / 1000);
  t.One("crawler_checkpoint_last_bytes", "gauge", "The last checkpoint's size.",
        c.last_bytes);
}

void ClusterFamilies(const ClusterReport& c, const ClusterHealth& h, Text& t) {
  t.Family("crawler_cluster_info", "gauge", "This node's job and name (value 1).");
  t.Sample("crawler_cluster_info", Label("job", c.job) + "," + Label("node", c.node), 1);
  t.One("crawler_cluster_nodes", "gauge", "Nodes in the job.", c.nodes);
  t.One("crawler_cluster_shards_owned", "gauge", "Shards this node owns.",
        c.shards_owned);
  t.Family("crawler_cluster_stream_lag_entries", "gauge",
           "Entries of an owned shard's stream this node has not read yet.");
  for (const auto& [shard, lag] : h.owned_lag)
    t.Sample("crawler_cluster_stream_lag_entries", Label("shard", std::to_string(shard)),
             lag);
  t.One("crawler_cluster_leases_held", "gauge",
        "Owned shards whose lease this node holds now (it fetches only their hosts).",
        c.leases_held);
  t.One("crawler_cluster_lease_losses_total", "counter",
        "Leases that expired unrenewed or went to another holder.", c.lease_losses);
  t.One("crawler_cluster_acks_fenced_total", "counter",
        "Acknowledges Redis refused because this node's lease epoch was stale.",
        c.acks_fenced);
  t.One("crawler_cluster_fetches_deferred_total", "counter",
        "URLs put back because their shard's lease was not held.", c.fetches_deferred);
  t.One("crawler_cluster_shards_given_total", "counter",
        "Shards this node handed to a less loaded node (work-aware placement).",
        c.shards_given);
  t.Family("crawler_cluster_address_turns_total", "counter",
           "Turns at an address over the whole job (cluster.ip_politeness): granted "
           "by Redis (those no request took: address_turns_unused_total), or by this "
           "node alone while Redis could not be asked.");
  t.Sample("crawler_cluster_address_turns_total", Label("granted_by", "redis"),
           c.address_turns);
  t.Sample("crawler_cluster_address_turns_total", Label("granted_by", "node"),
           c.address_turns_local);
  t.One("crawler_cluster_address_waits_total", "counter",
        "Turns at an address Redis refused for now (another node's request there).",
        c.address_waits);
  t.One("crawler_cluster_address_turns_unused_total", "counter",
        "Turns Redis granted that no request took within its claim (given back).",
        c.address_turns_unused);
  t.One("crawler_cluster_urls_sent_total", "counter",
        "URLs sent to other nodes (confirmed by Redis).", c.urls_sent);
  t.One("crawler_cluster_urls_received_total", "counter",
        "URLs received from other nodes and admitted.", c.urls_received);
  t.Family("crawler_cluster_outbox_urls", "gauge",
           "URLs waiting to be sent: in RAM (held ones included) and in spill files.");
  t.Sample("crawler_cluster_outbox_urls", Label("where", "memory"),
           c.urls_queued - std::min(c.urls_queued, c.urls_on_disk));
  t.Sample("crawler_cluster_outbox_urls", Label("where", "disk"), c.urls_on_disk);
  t.One("crawler_cluster_outbox_held_urls", "gauge",
        "URLs in RAM for shards over their lag limit.", c.urls_held);
  t.One("crawler_cluster_malformed_entries_total", "counter",
        "Stream entries skipped as malformed.", c.malformed);
  t.One("crawler_cluster_sends_refused_total", "counter",
        "Batch sends Redis refused (full at maxmemory, a replica, cannot persist); "
        "held and sent again.",
        c.sends_refused);
  t.One("crawler_cluster_sends_blocked", "gauge",
        "1 while Redis refuses this node's sends (full): the outbox waits; 0 else.",
        c.sends_blocked.empty() ? 0 : 1);
  t.One("crawler_cluster_redis_down_seconds", "gauge",
        "How long Redis has been unreachable (0: connected).", c.redis_down_s);
  t.Family("crawler_redis_rtt_seconds", "histogram",
           "Round-trip time of the heartbeat's Redis pipeline.");
  uint64_t cumulative = 0;
  for (size_t i = 0; i < ClusterHealth::kRttBounds.size(); ++i) {
    cumulative += h.rtt_buckets[i];
    t.Sample("crawler_redis_rtt_seconds_bucket",
             Label("le", fmt::format("{}", ClusterHealth::kRttBounds[i])), cumulative);
  }
  t.Sample("crawler_redis_rtt_seconds_bucket", Label("le", "+Inf"), h.rtt_count);
  t.Sample("crawler_redis_rtt_seconds_sum", "", h.rtt_sum_s);
  t.Sample("crawler_redis_rtt_seconds_count", "", h.rtt_count);
}

}  // namespace

std::string RenderMetrics(const MetricsInput& in) {
  Text t;
  t.Family("crawler_build_info", "gauge", "The crawler's version (value 1).");
  t.Sample("crawler_build_info", Label("version", Version()), 1);
  CrawlFamilies(in.report, t);
  LossFamilies(in.report.crawl, t);
  RecrawlFamilies(in.report, t);
  FrontierFamilies(in.report.frontier, t);
  DnsFamilies(in.report.dns, t);
  BrowserFamilies(in.report.browser, t);
  MemoryFamilies(in.report.memory, t);
  DedupFamilies(in.report.dedup, t);
  CheckpointFamilies(in.report.checkpoint, t);
  if (in.cluster != nullptr) ClusterFamilies(in.report.cluster, *in.cluster, t);
  t.One("crawler_metrics_render_seconds_total", "counter",
        "Crawl (Run thread) time spent rendering this text, over all scrapes.",
        in.render_s_total);
  t.One("crawler_metrics_renders_total", "counter", "Renders of this text.", in.renders);
  return t.Take();
}

// ---- the server ----

struct MetricsServer::Io {
  net::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  net::steady_timer pause{ioc};  // after an accept error (EMFILE): no spin
  int sessions = 0;              // open connections (the server thread's)
};

namespace {

// Scrapers are few; each connection holds a descriptor the crawl may need.
constexpr int kMaxSessions = 16;

// One connection: requests in turn (keep-alive), each answered whole.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, MetricsServer* server, int* sessions)
      : stream_(std::move(socket)), server_(server), sessions_(sessions) {
    ++*sessions_;
  }
  ~Session() { --*sessions_; }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  void Read() {
    req_ = {};
    stream_.expires_after(std::chrono::seconds(30));
    http::async_read(stream_, buf_, req_,
                     beast::bind_front_handler(&Session::OnRead, shared_from_this()));
  }

 private:
  void OnRead(beast::error_code ec, size_t) {
    if (ec) return Close();
    res_ = {};
    res_.version(req_.version());
    res_.set(http::field::server, Software());
    res_.keep_alive(req_.keep_alive());
    std::string_view target = req_.target();
    target = target.substr(0, target.find('?'));
    if (req_.method() != http::verb::get && req_.method() != http::verb::head) {
      res_.result(http::status::method_not_allowed);
      res_.set(http::field::allow, "GET, HEAD");
    } else if (target != "/metrics") {
      res_.result(http::status::not_found);
      res_.set(http::field::content_type, "text/plain; charset=utf-8");
      res_.body() = "not found: the metrics are at /metrics\n";
    } else {
      res_.result(http::status::ok);
      res_.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
      res_.body() = server_->Scrape();
    }
    res_.prepare_payload();
    if (req_.method() == http::verb::head) res_.body().clear();
    stream_.expires_after(std::chrono::seconds(30));
    http::async_write(stream_, res_,
                      beast::bind_front_handler(&Session::OnWrite, shared_from_this()));
  }
  void OnWrite(beast::error_code ec, size_t) {
    if (ec) return Close();
    if (res_.keep_alive()) return Read();
    Close();
  }
  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buf_;
  http::request<http::string_body> req_;
  http::response<http::string_body> res_;
  MetricsServer* server_;
  int* sessions_;
};

template <typename IoT>
void Accept(IoT& io, MetricsServer* server) {
  io.acceptor.async_accept([&io, server](beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted) return;
    if (ec) {
      // Out of descriptors (EMFILE, ENFILE) or another accept error: the
      // connection stays queued and accept would fail again at once, a hot
      // loop. Wait 100 ms (logged once a minute).
      server->CountAcceptError();
      static std::chrono::steady_clock::time_point logged{};
      auto now = std::chrono::steady_clock::now();
      if (now - logged > std::chrono::seconds(60)) {
        logged = now;
        spdlog::warn("metrics: accept: {}; trying again every 100 ms", ec.message());
      }
      io.pause.expires_after(std::chrono::milliseconds(100));
      io.pause.async_wait([&io, server](beast::error_code e) {
        if (!e) Accept(io, server);
      });
      return;
    }
    if (io.sessions >= kMaxSessions) {
      beast::error_code ignored;  // over the cap: closed at once (a scraper retries)
      socket.shutdown(tcp::socket::shutdown_both, ignored);
      socket.close(ignored);
    } else {
      std::make_shared<Session>(std::move(socket), server, &io.sessions)->Read();
    }
    Accept(io, server);
  });
}

}  // namespace

Result<std::unique_ptr<MetricsServer>> MetricsServer::Start(const std::string& listen) {
  auto bad = [&](const std::string& why) {
    return Status::Error(Status::Code::kInvalidArgument,
                         "metrics.listen = \"" + listen + "\": " + why);
  };
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return bad("not HOST:PORT");
  std::string host = listen.substr(0, colon), port = listen.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  auto io = std::make_unique<Io>();
  beast::error_code ec;
  tcp::resolver resolver(io->ioc);
  auto found = resolver.resolve(host, port, tcp::resolver::numeric_service, ec);
  if (ec || found.empty()) return bad("cannot resolve: " + ec.message());
  tcp::endpoint at = found.begin()->endpoint();
  io->acceptor.open(at.protocol(), ec);
  if (!ec) io->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) io->acceptor.bind(at, ec);
  if (!ec) io->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return bad(ec.message());
  tcp::endpoint bound = io->acceptor.local_endpoint();
  std::string address = bound.address().to_string();
  if (bound.address().is_v6()) address = "[" + address + "]";
  std::string url = "http://" + address + ":" + std::to_string(bound.port()) + "/metrics";
  spdlog::info("metrics: serving {}", url);
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(io), std::move(url)));
}

MetricsServer::MetricsServer(std::unique_ptr<Io> io, std::string url)
    : io_(std::move(io)), url_(std::move(url)) {
  Accept(*io_, this);
  thread_ = std::thread([this] { io_->ioc.run(); });
}

MetricsServer::~MetricsServer() {
  io_->ioc.stop();
  {
    MutexLock lock(mu_);  // a scrape waiting for text ends now
    published_ = wanted_.load();
  }
  cv_.notify_all();
  thread_.join();
}

void MetricsServer::Publish(std::string text, double render_s) {
  {
    MutexLock lock(mu_);
    text_ = std::move(text);
    render_s_total_ += render_s;
    ++renders_;
    published_ = wanted_.load();
  }
  cv_.notify_all();
}

double MetricsServer::render_s_total() const {
  MutexLock lock(mu_);
  return render_s_total_;
}

uint64_t MetricsServer::renders() const {
  MutexLock lock(mu_);
  return renders_;
}

std::string MetricsServer::Scrape() {
  MutexLock lock(mu_);
  uint64_t mine = ++wanted_;
  cv_.wait_for(mu_, std::chrono::milliseconds(250),
               [&]() REQUIRES(mu_) { return published_.load() >= mine; });
  return text_;
}

}  // namespace crawler::report
