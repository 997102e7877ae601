// The stats report; see crawler/stats_report.h.
#include "crawler/stats_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "crawler/checkpoint.h"
#include "output/json_fields.h"
#include "report/stats_schema.h"
#include "report/svg_chart.h"

namespace crawler::report {
namespace {

namespace json = boost::json;

// 1234567 -> "1,234,567"
std::string Bytes(uint64_t n) {
  const double b = static_cast<double>(n);
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.1f} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.1f} kB", b / 1e3);
  return fmt::format("{:.0f} B", b);
}
std::string Pct(double v) {
  if (v > 0 && v < 1e-7) return fmt::format("{:.2e} %", v * 100);
  return v < 0.001 ? fmt::format("{:.5f} %", v * 100) : fmt::format("{:.3f} %", v * 100);
}

std::string Kinds(const std::map<std::string, uint64_t>& counts) {
  return engine::KindsText(counts, [](uint64_t n) { return Count(n); });
}

struct Row {
  std::string label, value;
};
struct Section {
  std::string title;
  std::vector<Row> rows;
};

Section DedupSection(const DedupReport& d) {
  Section dd{"Dedup", {}};
  dd.rows.push_back({"variant", d.variant + ", " + Count(d.stripes) + " stripes, " +
                                    Count(d.layers_min) + ".." + Count(d.layers_max) +
                                    " layers per stripe"});
  dd.rows.push_back({"items / capacity", Count(d.items) + " / " + Count(d.capacity)});
  dd.rows.push_back(
      {"memory", Bytes(d.bytes) + ", " + fmt::format("{:.2f}", d.bits_per_item) +
                     " bits/item" +
                     (d.log_buffer_bytes
                          ? " (+ " + Bytes(d.log_buffer_bytes) + " of hash-log buffers)"
                          : "")});
  if (d.logged_stripes > 0 || d.compactions > 0) {  // a running crawl's report
    dd.rows.push_back({"compaction", Count(d.compactions) + " rebuilds in " +
                                         fmt::format("{:.2f}", d.compaction_s) +
                                         " s over the crawl; hash log on " +
                                         Count(d.logged_stripes) + " of " +
                                         Count(d.stripes) + " stripes"});
  }
  dd.rows.push_back({d.variant == "cuckoo" ? "load factor" : "fill ratio", Pct(d.fill)});
  dd.rows.push_back(
      {"estimated FPR", Pct(d.estimated_fpr) + " now, bound " + Pct(d.fpr_bound)});
  dd.rows.push_back({"inserts", Count(d.inserts_new) + " new, " +
                                    Count(d.inserts_duplicate) + " duplicate (" +
                                    Pct(d.duplicate_rate) + " duplicates)"});
  // Two figures, each for what it is (docs/stats.md): the filter's expected
  // wrong answers, and the pages lost, of which they are the expected value
  // (not a bound: a count scatters around it) until a compaction rebuilds.
  dd.rows.push_back({"wrong \"seen\" (expected)",
                     fmt::format("{:.2f}", d.expected_false_seen) +
                         " new URLs expected refused as seen so far (the sum of the FPR "
                         "at each new-URL check)"});
  dd.rows.push_back(
      {"pages lost", fmt::format("expected about {:.2f}", d.expected_false_seen) +
                         " (each needs a wrong refusal; the count scatters around it; "
                         "fewer once compaction has rebuilt: a refused URL is admitted "
                         "by its next link after a rebuild)"});
  dd.rows.push_back(
      {"relocations / saturations", Count(d.relocations) + " cuckoo kicks, " +
                                        Count(d.saturations) + " saturated counters"});
  std::string fullest;
  for (const StripeFill& st : d.fullest_stripes) {
    fullest += (fullest.empty() ? "" : ", ") + std::string("#") + Count(st.stripe) + " " +
               fmt::format("{:.1f}%", st.fill * 100);
  }
  dd.rows.push_back({"fullest stripes", fullest});
  return dd;
}

Section FrontierSection(const FrontierReport& f) {
  Section fr{"Frontier", {}};
  fr.rows.push_back({"queued", Count(f.queued_memory) + " in RAM + " +
                                   Count(f.queued_disk) + " on disk, " +
                                   Count(f.in_flight) + " in flight"});
  fr.rows.push_back(
      {"hosts", Count(f.hosts) + " total: " + Count(f.hosts_ready) + " ready, " +
                    Count(f.hosts_waiting_politeness) + " waiting (politeness; " +
                    Count(f.hosts_waiting_ip) + " for their address), " +
                    Count(f.hosts_waiting_robots) + " waiting for robots.txt, " +
                    Count(f.hosts_blocked_robots) + " blocked by robots.txt"});
  fr.rows.push_back(
      {"hosts backing off", Count(f.hosts_backing_off) + " slowed down (429/503), " +
                                Count(f.hosts_parked) + " parked (unreachable)"});
  fr.rows.push_back(
      {"addresses", Count(f.addresses) + " known (politeness per address)"});
  std::string depths;
  for (const DepthCount& d : f.depths)
    depths += (depths.empty() ? "" : "  ") + Count(d.depth) + ":" + Count(d.urls);
  fr.rows.push_back({"queued by depth", depths.empty() ? "(empty)" : depths});
  return fr;
}

Section CrawlSection(const engine::CrawlCounts& c, const CrawlRates& r,
                     const std::string& variant) {
  Section cr{"Crawl", {}};
  cr.rows.push_back({"fetched", Count(c.fetched) + " responses, " + Count(c.failed) +
                                    " failed, " + Bytes(c.bytes)});
  if (c.payload_revisits > 0) {
    cr.rows.push_back({"payloads stored once",
                       Count(c.payload_revisits) + " responses written as revisits of " +
                           "a capture of the same payload (dedup.payload), " +
                           Bytes(c.payload_bytes_saved) + " not stored again"});
  }
  cr.rows.push_back({"status", "2xx " + Count(c.status_2xx) + ", 3xx " +
                                   Count(c.status_3xx) + ", 4xx " + Count(c.status_4xx) +
                                   ", 5xx " + Count(c.status_5xx)});
  cr.rows.push_back({"errors", Kinds(c.errors)});
  cr.rows.push_back({"retries", Count(c.retries) + " attempts fetched again, " +
                                    Count(c.gave_up) + " URLs given up after " +
                                    "their last attempt"});
  if (c.dns_deferred + c.other_address > 0)
    cr.rows.push_back({"deferred", Count(c.dns_deferred) +
                                       " attempts whose lookup failed, fetched again "
                                       "later; " +
                                       Count(c.other_address) +
                                       " whose address did not connect, fetched again "
                                       "at the host's next address"});
  if (c.rendered + c.render_failed > 0)
    cr.rows.push_back(
        {"rendered", Count(c.rendered) + " pages rendered in the browser, " +
                         Count(c.render_failed) + " it gave up (recorded as fetched); " +
                         Count(c.render_resources) + " of its responses archived"});
  // Losses: what no server answered for (exit 3 at a crawl's end).
  const uint64_t lost = engine::KindsTotal(c.lost);
  const uint64_t lost_hosts = engine::KindsTotal(c.lost_hosts);
  cr.rows.push_back({"lost", lost == 0 ? "none"
                                       : Count(lost) + " URLs no server answered for (" +
                                             Kinds(c.lost) + "); " + Count(lost_hosts) +
                                             " hosts whose robots.txt had no answer (" +
                                             Kinds(c.lost_hosts) + ")"});
  if (c.forgotten + c.cannot_forget > 0) {
    // "cannot forget": named, not hidden (a bloom filter cannot erase).
    std::string row = Count(c.forgotten) +
                      " URLs given up or over the per-host cap erased from the filter "
                      "(a later link admits them again)";
    if (c.cannot_forget > 0) {
      row += "; cannot forget (" +
             std::string(variant == "bloom" ? "bloom" : "dedup.allow_erase off") +
             "): " + Count(c.cannot_forget) + " (they stay seen)";
    }
    cr.rows.push_back({"forgotten", row});
  }
  cr.rows.push_back(
      {"skipped", Count(c.robots_blocked) + " robots.txt, " + Count(c.unresolved) +
                      " host not resolved, " + Count(c.out_of_scope) + " out of scope, " +
                      Count(c.too_deep) + " too deep, " + Count(c.trap_guard) +
                      " trap guard, " + Count(c.too_many_redirects) +
                      " redirect limit, " + Count(c.filter_full) +
                      " refused by a full fixed-size filter"});
  cr.rows.push_back({"guards, budgets", Kinds(c.guarded)});
  cr.rows.push_back({"pages/s", fmt::format("{:.1f}", r.pages_per_s) + " overall, " +
                                    fmt::format("{:.1f}", r.pages_per_s_last_minute) +
                                    " over the last minute"});
  cr.rows.push_back({"elapsed", fmt::format("{:.1f} s", r.elapsed_s)});
  std::string top;
  for (const HostCount& h : r.top_hosts)
    top += (top.empty() ? "" : ", ") + h.host + " " + Count(h.fetched);
  cr.rows.push_back({"top hosts", top});
  return cr;
}

Section CheckpointSection(const checkpoint::CheckpointFigures& k) {
  Section ck{"Checkpoints", {}};
  ck.rows.push_back({"written", Count(k.written) + " this run (" + Count(k.failed) +
                                    " failed), last sequence " + Count(k.sequence)});
  ck.rows.push_back(
      {"last", Bytes(k.last_bytes) + " in " + fmt::format("{:.3f} s", k.last_write_s) +
                   ", workers paused " + fmt::format("{:.1f} ms", k.last_pause_ms) +
                   " (max " + fmt::format("{:.1f} ms", k.max_pause_ms) + ")"});
  return ck;
}

Section ClusterSection(const ClusterReport& c) {
  Section cl{"Cluster", {}};
  cl.rows.push_back({"node", c.node + " of job " + c.job + ": " + Count(c.shards_owned) +
                                 " shards of " + Count(c.nodes) + " nodes"});
  cl.rows.push_back({"exchange", Count(c.urls_sent) + " URLs sent (" +
                                     Count(c.batches_sent) + " batches), " +
                                     Count(c.urls_received) + " received, " +
                                     Count(c.urls_queued) + " queued, " +
                                     Count(c.malformed) + " malformed entries skipped"});
  cl.rows.push_back({"leases", Count(c.leases_held) + " held, " + Count(c.lease_losses) +
                                   " lost or expired, " + Count(c.acks_fenced) +
                                   " acknowledges refused (fenced), " +
                                   Count(c.fetches_deferred) + " fetches deferred, " +
                                   Count(c.shards_given) +
                                   " shards given to idle nodes"});
  cl.rows.push_back(
      {"addresses",
       Count(c.address_turns) + " turns from Redis, " + Count(c.address_waits) +
           " waits, " + Count(c.address_turns_local) + " turns without Redis, " +
           Count(c.address_turns_unused) + " not taken (politeness per address)"});
  cl.rows.push_back({"redis", c.redis_down_s > 0
                                  ? fmt::format("down {:.0f} s", c.redis_down_s)
                                  : std::string("connected")});
  return cl;
}

// "2^KK" (CrawlCounts::revisit_intervals) as a duration: "<= 32 s".
std::string IntervalLabel(const std::string& bucket) {
  const int k = bucket.size() == 4 ? std::stoi(bucket.substr(2)) : 0;
  const uint64_t s = uint64_t{1} << k;
  if (s < 120) return "<= " + std::to_string(s) + " s";
  if (s < 7200) return "<= " + std::to_string(s / 60) + " min";
  if (s < 172800) return "<= " + std::to_string(s / 3600) + " h";
  return "<= " + std::to_string(s / 86400) + " d";
}

Section RecrawlSection(const engine::CrawlCounts& c, const RecrawlReport& r) {
  Section rs{"Recrawl", {}};
  uint64_t urls = 0;
  std::string intervals;
  for (const auto& [bucket, n] : c.revisit_intervals) {
    urls += n;
    intervals +=
        (intervals.empty() ? "" : ", ") + IntervalLabel(bucket) + ": " + Count(n);
  }
  rs.rows.push_back({"history", Count(urls) + " URLs; " + Count(r.due) +
                                    (r.due_capped ? " or more" : "") +
                                    " due and not yet queued"});
  const uint64_t revisits =
      c.revisits_not_modified + c.revisits_identical + c.revisits_changed;
  rs.rows.push_back(
      {"revisits", Count(revisits) + ": " + Count(c.revisits_not_modified) +
                       " not modified (304), " + Count(c.revisits_identical) +
                       " identical payload, " + Count(c.revisits_changed) + " changed; " +
                       Bytes(c.revisit_bytes_saved) + " not stored again; " +
                       Count(c.history_forgotten) + " gone URLs forgotten"});
  rs.rows.push_back({"intervals", intervals.empty() ? "none yet" : intervals});
  if (r.mu > 0) {
    rs.rows.push_back(
        {"change-rate",
         fmt::format("price mu {:.3g} s; revisits asked for: {:.2f}/s", r.mu,
                     static_cast<double>(c.revisit_demand_uhz) / 1e6)});
  }
  return rs;
}

Section DnsSection(const DnsReport& d) {
  Section ds{"DNS", {}};
  ds.rows.push_back({"lookups", Count(d.queries) + " sent (" + Count(d.refreshes) +
                                    " refreshes ahead of expiry); " + Count(d.entries) +
                                    " names cached"});
  ds.rows.push_back(
      {"cache", fmt::format("{:.1f}% of fetches answered at once ({} of {})",
                            100 * d.hit_ratio, Count(d.hits), Count(d.hits + d.misses))});
  ds.rows.push_back({"failures", Count(d.not_found) + " not found, " + Count(d.failed) +
                                     " failed, " + Count(d.timeouts) + " timed out"});
  ds.rows.push_back({"latency", fmt::format("p50 {:.1f} ms, p99 {:.1f} ms",
                                            d.latency_p50_ms, d.latency_p99_ms)});
  return ds;
}

Section BrowserSection(const BrowserReport& b) {
  Section bs{"Browser", {}};
  bs.rows.push_back({"render time", fmt::format("p50 {:.2f} s, p99 {:.2f} s",
                                                b.render_p50_s, b.render_p99_s)});
  bs.rows.push_back({"browsers", Count(b.started) + " started, " + Count(b.deaths) +
                                     " died, " + Count(b.retried) + " pages retried"});
  bs.rows.push_back(
      {"CPU", fmt::format("{:.1f} s in the browsers, {:.1f} s in the crawler: "
                          "the browsers took {:.0f}%",
                          b.cpu_s, b.crawl_cpu_s, 100 * b.cpu_share)});
  return bs;
}

// The resident set by part (MemoryReport), and per host known.
Section MemorySection(const MemoryReport& m, uint64_t hosts) {
  Section ms{"Memory", {}};
  ms.rows.push_back({"resident", Bytes(m.rss) + " (" + m.allocator + ": " +
                                     Bytes(m.allocated) + " allocated, " +
                                     Bytes(m.allocator_resident) + " resident)"});
  ms.rows.push_back({"parts", "filter " + Bytes(m.filter) + ", frontier URLs " +
                                  Bytes(m.frontier_urls) + ", frontier hosts " +
                                  Bytes(m.frontier_hosts) + ", frontier addresses " +
                                  Bytes(m.frontier_addresses) + ", host table " +
                                  Bytes(m.host_table) + ", DNS " + Bytes(m.dns) +
                                  ", scope " + Bytes(m.scope) + ", robots.txt queue " +
                                  Bytes(m.robots_queue) + ", bodies " + Bytes(m.bodies)});
  ms.rows.push_back(
      {"other", Bytes(m.other) + " (code, stacks, libraries, the allocator's spare)"});
  if (hosts > 0) {
    const uint64_t per_host =
        m.frontier_hosts + m.frontier_addresses + m.host_table + m.dns + m.scope;
    ms.rows.push_back(
        {"per host", Bytes(m.rss / hosts) + " resident, " + Bytes(per_host / hosts) +
                         " in the per-host parts (" + Count(hosts) + " hosts known)"});
  }
  return ms;
}

std::vector<Section> Sections(const StatsReport& s) {
  std::vector<Section> out = {DedupSection(s.dedup), FrontierSection(s.frontier),
                              CrawlSection(s.crawl, s.rates, s.dedup.variant),
                              CheckpointSection(s.checkpoint)};
  if (!s.cluster.node.empty()) out.push_back(ClusterSection(s.cluster));
  if (s.recrawl.enabled) out.push_back(RecrawlSection(s.crawl, s.recrawl));
  if (s.dns.enabled) out.push_back(DnsSection(s.dns));
  if (s.browser.enabled) out.push_back(BrowserSection(s.browser));
  if (s.memory.rss > 0) out.push_back(MemorySection(s.memory, s.frontier.hosts));
  return out;
}

// One inline SVG line chart of series[key] (and optionally a second line).
using SeriesField = double (*)(const SeriesPoint&);

std::string Chart(const std::string& title, const std::vector<SeriesPoint>& series,
                  SeriesField key, SeriesField key2 = nullptr, bool percent = false) {
  std::vector<ChartLine> lines(key2 != nullptr ? 2 : 1);
  for (const SeriesPoint& p : series) {
    lines[0].points.emplace_back(p.t, key(p));
    if (key2 != nullptr) lines[1].points.emplace_back(p.t, key2(p));
  }
  return LineChart(title, lines, [percent](double v) {
    return percent ? fmt::format("{:.4f}%", v * 100) : Count(v);
  });
}

std::string Source(const std::string& source, const StatsReport& s) {
  std::time_t t = static_cast<std::time_t>(s.updated_unix);
  char when[64] = "?";
  std::tm tm{};
  if (::gmtime_r(&t, &tm) != nullptr)
    std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return source + ", updated " + when + (s.running ? " (crawl running)" : "");
}

}  // namespace

Result<json::object> LoadStats(const std::string& out, std::string* source) {
  std::optional<json::object> best;
  std::string problems;
  {
    std::ifstream in(out + "/stats.json");
    std::stringstream text;
    text << in.rdbuf();
    if (in) {
      try {
        json::value v = json::parse(text.str());
        if (v.is_object()) {
          best = v.as_object();
          *source = out + "/stats.json";
        }
      } catch (const std::exception& e) {
        problems += out + "/stats.json: " + e.what() + "; ";
      }
    }
  }
  for (const char* dir : {checkpoint::kCheckpointDir, checkpoint::kCheckpointPrevDir}) {
    std::string path = out + "/" + dir;
    if (!std::filesystem::exists(path)) continue;
    auto m = checkpoint::ReadManifest(path);
    if (!m.ok()) {
      problems += m.status().message() + "; ";
      continue;
    }
    const json::object& stats = m->at("stats").as_object();
    if (!best || StatsReportFromJson(stats).updated_unix >
                     StatsReportFromJson(*best).updated_unix) {
      best = stats;
      *source = path + "/MANIFEST.json";
    }
    break;  // the newest valid checkpoint only
  }
  if (!best) {
    return Status::Error(
        Status::Code::kInvalidArgument,
        out + ": no stats.json and no readable checkpoint" +
            (problems.empty() ? std::string(" (not a crawl output directory?)")
                              : ": " + problems));
  }
  return *best;
}

namespace {

std::vector<SeriesPoint> LoadSeries(const std::string& out) {
  std::vector<SeriesPoint> series;
  std::ifstream in(out + "/stats-series.jsonl");
  for (std::string line; std::getline(in, line);) {
    boost::system::error_code ec;
    json::value v = json::parse(line, ec);
    if (!ec && v.is_object())
      series.push_back(output::json_fields::ReadLenient<SeriesPoint>(v));
  }
  return series;
}

std::string StatsText(const StatsReport& stats, const std::string& source) {
  std::string out = "crawler stats: " + Source(source, stats) + "\n";
  for (const Section& s : Sections(stats)) {
    out += "\n" + s.title + "\n";
    for (const Row& r : s.rows) {
      out += fmt::format("  {:<26} {}\n", r.label, r.value);
    }
  }
  return out;
}

std::string StatsHtml(const StatsReport& stats, const std::vector<SeriesPoint>& series,
                      const std::string& source) {
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>crawler "
      "stats</title>\n"
      "<style>body{font:14px/1.4 sans-serif;margin:24px;color:#222}h1{font-size:20px}"
      "h2{font-size:16px;margin-top:24px}table{border-collapse:collapse}"
      "td{border-bottom:1px solid #e3e3ea;padding:4px 12px 4px 0;vertical-align:top}"
      "td:first-child{color:#555;white-space:nowrap}figure{display:inline-block;margin:"
      "8px}</style>\n"
      "</head><body>\n<h1>crawler stats</h1>\n<p>" +
      HtmlEscape(Source(source, stats)) + "</p>\n";
  for (const Section& s : Sections(stats)) {
    html += "<h2>" + HtmlEscape(s.title) + "</h2>\n<table>\n";
    for (const Row& r : s.rows)
      html += "<tr><td>" + HtmlEscape(r.label) + "</td><td>" + HtmlEscape(r.value) +
              "</td></tr>\n";
    html += "</table>\n";
  }
  html += "<h2>Over the crawl</h2>\n";
  html += Chart("pages/s (last minute)", series,
                [](const SeriesPoint& p) { return p.pages_per_s; });
  html += Chart("dedup items", series,
                [](const SeriesPoint& p) { return static_cast<double>(p.dedup_items); });
  html += Chart(
      "estimated FPR (blue) vs bound (red, dashed)", series,
      [](const SeriesPoint& p) { return p.fpr; },
      [](const SeriesPoint& p) { return p.fpr_bound; }, true);
  html += Chart("frontier size (queued URLs)", series,
                [](const SeriesPoint& p) { return static_cast<double>(p.queued); });
  html += "</body></html>\n";
  return html;
}

}  // namespace

int RunStats(const std::string& out, bool as_json, const std::string& html_path) {
  std::string source;
  auto stats = LoadStats(out, &source);
  if (!stats.ok()) {
    std::fprintf(stderr, "crawler stats: %s\n", stats.status().message().c_str());
    return 2;
  }
  if (as_json) {
    std::printf("%s\n", json::serialize(*stats).c_str());
  } else {
    std::fputs(StatsText(StatsReportFromJson(*stats), source).c_str(), stdout);
  }
  if (!html_path.empty()) {
    std::string html = StatsHtml(StatsReportFromJson(*stats), LoadSeries(out), source);
    std::FILE* f = std::fopen(html_path.c_str(), "wb");
    bool ok = f != nullptr && std::fwrite(html.data(), 1, html.size(), f) == html.size();
    if (f != nullptr) ok = std::fclose(f) == 0 && ok;
    if (!ok) {
      std::fprintf(stderr, "crawler stats: %s: cannot write\n", html_path.c_str());
      return 1;
    }
    if (!as_json) std::printf("\nHTML report: %s\n", html_path.c_str());
  }
  return 0;
}

}  // namespace crawler::report
