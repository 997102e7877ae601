// See stats_writer.h.
#include "report/stats_writer.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>

#include "base/file_util.h"
#include "crawler/body.h"
#include "crawler/checkpoint.h"
#include "report/process_memory.h"

namespace crawler::report {
namespace {

namespace json = boost::json;
using frontier::Clock;

DedupReport Dedup(const dedup::FilterStats& fs, const engine::DedupCarried& before) {
  DedupReport d;
  d.variant = dedup::FilterTypeName(fs.type);
  d.stripes = fs.stripes;
  d.layers_min = fs.layers_min;
  d.layers_max = fs.layers_max;
  d.items = fs.items;
  d.capacity = fs.capacity;
  d.bytes = fs.bytes;
  d.bits_per_item = fs.bits_per_item;
  d.fill = fs.fill;
  d.estimated_fpr = fs.estimated_fpr;
  d.fpr_bound = fs.fpr_bound;
  d.inserts_new = fs.inserts_new;
  d.inserts_duplicate = fs.inserts_duplicate;
  uint64_t checks = fs.inserts_new + fs.inserts_duplicate;
  d.duplicate_rate =
      checks ? static_cast<double>(fs.inserts_duplicate) / static_cast<double>(checks)
             : 0.0;
  d.expected_false_seen = before.expected_false_seen + fs.expected_false_positives;
  d.relocations = fs.relocations;
  d.saturations = fs.saturations;
  d.inserts_full = fs.inserts_full;
  d.compactions = before.compactions + fs.compactions;
  d.compaction_s = before.compaction_s + fs.compaction_seconds;
  d.logged_stripes = fs.logged_stripes;
  d.log_buffer_bytes = fs.log_buffer_bytes;
  std::vector<std::pair<double, size_t>> fullest;
  for (size_t i = 0; i < fs.per_stripe.size(); ++i)
    fullest.emplace_back(fs.per_stripe[i].fill, i);
  std::sort(fullest.begin(), fullest.end(), [](auto& a, auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  for (size_t i = 0; i < std::min<size_t>(5, fullest.size()); ++i) {
    const dedup::StripeStats& st = fs.per_stripe[fullest[i].second];
    d.fullest_stripes.push_back(
        StripeFill{fullest[i].second, st.fill, st.items, st.layers, st.estimated_fpr});
  }
  return d;
}

FrontierReport Frontier(const frontier::FrontierStats& s, uint64_t spilled_base,
                        uint64_t blocked) {
  FrontierReport f;
  f.queued_memory = s.queued_memory;
  f.queued_disk = s.queued_disk;
  f.in_flight = s.in_flight;
  f.hosts = s.hosts;
  f.hosts_ready = s.hosts_ready;
  f.hosts_waiting_politeness = s.hosts_waiting_politeness;
  f.hosts_waiting_ip = s.hosts_waiting_ip;
  f.addresses = s.addresses;
  f.hosts_waiting_robots = s.hosts_waiting_robots;
  f.hosts_backing_off = s.hosts_backing_off;
  f.hosts_parked = s.hosts_parked;
  f.hosts_blocked_robots = blocked;
  f.spilled = spilled_base + s.spilled;
  for (const auto& [depth, n] : s.depths) f.depths.push_back(DepthCount{depth, n});
  return f;
}

BrowserReport Browser(const browser::Pool::Figures& f) {
  BrowserReport b;
  b.enabled = true;
  b.started = f.started;
  b.deaths = f.deaths;
  b.retried = f.retried;
  b.render_p50_s = f.render_p50_s;
  b.render_p99_s = f.render_p99_s;
  b.cpu_s = f.cpu_s;
  rusage self{};
  if (::getrusage(RUSAGE_SELF, &self) == 0) {
    b.crawl_cpu_s =
        static_cast<double>(self.ru_utime.tv_sec + self.ru_stime.tv_sec) +
        static_cast<double>(self.ru_utime.tv_usec + self.ru_stime.tv_usec) / 1e6;
  }
  const double all = b.cpu_s + b.crawl_cpu_s;
  b.cpu_share = all > 0 ? b.cpu_s / all : 0;
  return b;
}

DnsReport Dns(const engine::DnsFigures& d) {
  const uint64_t asked = d.hits + d.misses;
  return DnsReport{
      true,
      d.queries,
      d.hits,
      d.misses,
      asked > 0 ? static_cast<double>(d.hits) / static_cast<double>(asked) : 0.0,
      d.refreshes,
      d.not_found,
      d.failed,
      d.timeouts,
      d.entries,
      d.latency_p50_ms,
      d.latency_p99_ms};
}

// The parts' bytes, and the rest of the resident set as "other".
MemoryReport Memory(const dedup::FilterStats& fs, const frontier::FrontierMemory& fm,
                    uint64_t host_table, uint64_t dns, uint64_t scope,
                    uint64_t robots_queue) {
  ProcessMemory p = ReadProcessMemory();
  MemoryReport m;
  m.allocator = p.allocator;
  m.rss = p.rss;
  m.allocated = p.allocated;
  m.allocator_resident = p.allocator_resident;
  m.filter = fs.bytes + fs.log_buffer_bytes;
  m.frontier_urls = fm.urls;
  m.frontier_hosts = fm.hosts;
  m.frontier_addresses = fm.addresses;
  m.host_table = host_table;
  m.dns = dns;
  m.scope = scope;
  m.robots_queue = robots_queue;
  m.bodies = engine::Body::RamBytes();
  const uint64_t parts = m.filter + m.frontier_urls + m.frontier_hosts +
                         m.frontier_addresses + m.host_table + m.dns + m.scope +
                         m.robots_queue + m.bodies;
  m.other = m.rss > parts ? m.rss - parts : 0;
  return m;
}

double WallNow() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Result<std::unique_ptr<StatsWriter>> StatsWriter::Open(const std::string& out,
                                                       const Sources& sources) {
  std::string path = out + "/stats-series.jsonl";
  std::FILE* series = std::fopen(path.c_str(), "abe");
  if (series == nullptr) return IoError(path, "open");
  return std::unique_ptr<StatsWriter>(new StatsWriter(out, sources, series));
}

StatsWriter::~StatsWriter() { std::fclose(series_); }

StatsReport StatsWriter::Build(bool running, double elapsed, uint64_t spilled_base,
                               const checkpoint::CheckpointFigures& checkpoints) {
  auto now = Clock::now();
  engine::CrawlSummary s = src_.counters.Summary();
  dedup::FilterStats fs = src_.filter.Stats();
  engine::HostTable::Figures hosts = src_.hosts.Summarize(10);

  StatsReport report;
  report.updated_unix = WallNow();
  report.running = running;
  report.out = out_;
  report.dedup = Dedup(fs, src_.counters.Carried());
  report.frontier =
      Frontier(src_.frontier.Stats(now), spilled_base, hosts.blocked_by_robots);
  report.crawl = s;
  report.checkpoint = checkpoints;
  CrawlRates& r = report.rates;
  r.pages = s.fetched + s.failed;
  r.elapsed_s = elapsed;
  r.pages_per_s = elapsed > 0 ? static_cast<double>(r.pages) / elapsed : 0.0;
  rate_samples_.emplace_back(now, r.pages);
  while (rate_samples_.size() > 1 &&
         now - rate_samples_.front().first > std::chrono::seconds(60)) {
    rate_samples_.pop_front();
  }
  double window =
      std::chrono::duration<double>(now - rate_samples_.front().first).count();
  r.pages_per_s_last_minute =
      window > 0.5 ? static_cast<double>(r.pages - rate_samples_.front().second) / window
                   : 0.0;
  for (const auto& [fetched, host] : hosts.top) r.top_hosts.push_back({host, fetched});
  uint64_t dns_bytes = 0;
  if (src_.resolver != nullptr) {
    const engine::DnsFigures d = src_.resolver->Figures();
    report.dns = Dns(d);
    dns_bytes = d.memory_bytes;
  }
  if (src_.browser != nullptr) report.browser = Browser(src_.browser->figures());
  report.memory = Memory(
      fs, src_.frontier.Memory(), hosts.memory_bytes, dns_bytes,
      src_.scope != nullptr ? src_.scope->HeapBytes() : 0,
      src_.robots_waiting_bytes != nullptr ? src_.robots_waiting_bytes->load() : 0);
  return report;
}

Status StatsWriter::Write(const StatsReport& report) {
  Status st = WriteFileAtomic(out_ + "/stats.json",
                              json::serialize(ToJson(report)) + "\n", /*durable=*/false);
  if (!st.ok()) return st;
  SeriesPoint point{report.rates.elapsed_s,
                    report.rates.pages,
                    report.rates.pages_per_s_last_minute,
                    report.dedup.items,
                    report.dedup.estimated_fpr,
                    report.dedup.fpr_bound,
                    report.frontier.queued_memory + report.frontier.queued_disk};
  std::string line = json::serialize(json::value_from(point)) + "\n";
  if (std::fputs(line.c_str(), series_) < 0 || std::fflush(series_) != 0) {
    return IoError(out_ + "/stats-series.jsonl", "write");
  }
  return Status::Ok();
}

Result<uint64_t> StatsWriter::SeriesBytes() {
  if (std::fflush(series_) != 0) return IoError(out_ + "/stats-series.jsonl", "write");
  long pos = std::ftell(series_);
  if (pos < 0) return IoError(out_ + "/stats-series.jsonl", "tell");
  return static_cast<uint64_t>(pos);
}

}  // namespace crawler::report
