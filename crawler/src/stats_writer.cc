// See stats_writer.h.
#include "stats_writer.h"

#include <algorithm>
#include <chrono>

#include "base/file_util.h"
#include "crawler/checkpoint.h"

namespace crawler::engine {
namespace {

namespace json = boost::json;
using frontier::Clock;

json::object DedupSection(const dedup::FilterStats& fs, double expected_false_seen) {
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
  d["duplicate_rate"] =
      checks ? static_cast<double>(fs.inserts_duplicate) / static_cast<double>(checks)
             : 0.0;
  d["expected_false_seen"] = expected_false_seen;
  d["relocations"] = fs.relocations;
  d["saturations"] = fs.saturations;
  d["inserts_full"] = fs.inserts_full;
  std::vector<std::pair<double, size_t>> fullest;
  for (size_t i = 0; i < fs.per_stripe.size(); ++i)
    fullest.emplace_back(fs.per_stripe[i].fill, i);
  std::sort(fullest.begin(), fullest.end(), [](auto& a, auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  json::array top;
  for (size_t i = 0; i < std::min<size_t>(5, fullest.size()); ++i) {
    const dedup::StripeStats& st = fs.per_stripe[fullest[i].second];
    top.push_back(json::object{{"stripe", fullest[i].second},
                               {"fill", st.fill},
                               {"items", st.items},
                               {"layers", st.layers},
                               {"estimated_fpr", st.estimated_fpr}});
  }
  d["fullest_stripes"] = std::move(top);
  return d;
}

json::object FrontierSection(const frontier::FrontierStats& s, uint64_t spilled_base,
                             uint64_t blocked) {
  json::object f;
  f["queued_memory"] = s.queued_memory;
  f["queued_disk"] = s.queued_disk;
  f["in_flight"] = s.in_flight;
  f["hosts"] = s.hosts;
  f["hosts_ready"] = s.hosts_ready;
  f["hosts_waiting_politeness"] = s.hosts_waiting_politeness;
  f["hosts_waiting_robots"] = s.hosts_waiting_robots;
  f["spilled"] = spilled_base + s.spilled;
  json::array depths;
  for (const auto& [depth, n] : s.depths)
    depths.push_back(json::object{{"depth", depth}, {"urls", n}});
  f["depths"] = std::move(depths);
  f["hosts_blocked_robots"] = blocked;
  return f;
}

json::object CheckpointSection(const CheckpointFigures& k) {
  return json::object{
      {"written", k.written},           {"failed", k.failed},
      {"sequence", k.sequence},         {"last_pause_ms", k.last_pause_ms},
      {"max_pause_ms", k.max_pause_ms}, {"last_write_s", k.last_write_s},
      {"last_bytes", k.last_bytes}};
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

json::object StatsWriter::Build(bool running, double elapsed, uint64_t spilled_base,
                                const CheckpointFigures& checkpoints) {
  auto now = Clock::now();
  CrawlSummary s = src_.counters.Summary();
  dedup::FilterStats fs = src_.filter.Stats();
  src_.counters.SetFpr(fs.estimated_fpr);
  HostTable::Figures hosts = src_.hosts.Summarize(10);

  json::object c = SummaryToJson(s);
  uint64_t pages = s.fetched + s.failed;
  c["pages"] = pages;
  c["elapsed_s"] = elapsed;
  c["pages_per_s"] = elapsed > 0 ? static_cast<double>(pages) / elapsed : 0.0;
  rate_samples_.emplace_back(now, pages);
  while (rate_samples_.size() > 1 &&
         now - rate_samples_.front().first > std::chrono::seconds(60)) {
    rate_samples_.pop_front();
  }
  double window =
      std::chrono::duration<double>(now - rate_samples_.front().first).count();
  c["pages_per_s_last_minute"] =
      window > 0.5 ? static_cast<double>(pages - rate_samples_.front().second) / window
                   : 0.0;
  json::array top_hosts;
  for (const auto& [fetched, host] : hosts.top)
    top_hosts.push_back(json::object{{"host", host}, {"fetched", fetched}});
  c["top_hosts"] = std::move(top_hosts);

  json::object report;
  report["version"] = 1;
  report["updated_unix"] = WallNow();
  report["running"] = running;
  report["out"] = out_;
  report["dedup"] = DedupSection(fs, src_.counters.ExpectedFalseSeen());
  report["frontier"] =
      FrontierSection(src_.frontier.Stats(now), spilled_base, hosts.blocked_by_robots);
  report["crawl"] = std::move(c);
  report["checkpoint"] = CheckpointSection(checkpoints);
  return report;
}

Status StatsWriter::Write(const json::object& report, double elapsed_s) {
  Status st = WriteFileAtomic(out_ + "/stats.json", json::serialize(report) + "\n",
                              /*durable=*/false);
  if (!st.ok()) return st;
  const json::object& d = report.at("dedup").as_object();
  const json::object& c = report.at("crawl").as_object();
  const json::object& fr = report.at("frontier").as_object();
  json::object point{{"t", elapsed_s},
                     {"pages", c.at("pages")},
                     {"pages_per_s", c.at("pages_per_s_last_minute")},
                     {"dedup_items", d.at("items")},
                     {"fpr", d.at("estimated_fpr")},
                     {"fpr_bound", d.at("fpr_bound")},
                     {"queued", fr.at("queued_memory").to_number<uint64_t>() +
                                    fr.at("queued_disk").to_number<uint64_t>()}};
  std::string line = json::serialize(point) + "\n";
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

}  // namespace crawler::engine
