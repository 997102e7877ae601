// See timeline.h.
#include "cluster/report/timeline.h"

#include <fmt/core.h>

#include <algorithm>
#include <functional>
#include <map>

#include "output/json_fields.h"
#include "report/svg_chart.h"

namespace crawler::cluster {

namespace json = boost::json;

Result<std::vector<TimelinePoint>> ReadTimeline(Redis& redis, const std::string& prefix) {
  auto r = redis.Command({"XRANGE", prefix + "timeline", "-", "+"});
  if (!r.ok()) return r.status();
  if (r->IsError())
    return Status::Error(Status::Code::kIoError,
                         "redis " + redis.address().Text() + ": time line: " + r->Str());
  std::vector<TimelinePoint> out;
  for (size_t i = 0; i < r->view().size(); ++i) {
    const ReplyView entry = (*r)[i];
    TimelinePoint p;
    p.unix_s = std::strtod(entry[0].str().c_str(), nullptr) / 1000;  // "MS-SEQ"
    bool read = false;
    entry[1].ForEachPair([&](ReplyView k, ReplyView v) {
      const std::string key = k.str();
      if (key == "n") {
        p.node = v.str();
      } else if (key == "m") {
        p.redis_bytes = std::strtoull(v.str().c_str(), nullptr, 10);
      } else if (key == "b") {
        p.load = v.str();
      } else if (key == "f") {
        boost::system::error_code ec;
        json::value f = json::parse(v.str(), ec);
        read = !ec && f.is_object();
        if (read) p.figures = output::json_fields::ReadLenient<report::ClusterReport>(f);
      }
    });
    if (read && !p.node.empty() && p.unix_s > 0) out.push_back(std::move(p));
  }
  return out;
}

namespace {

using Field = std::function<double(const TimelinePoint&)>;

// One line per node of `field`, and (if `all` names it) their sum: each
// node's latest value, a node counted while its last point is at most
// `fresh_s` old (0: for ever, for counts that only grow).
std::vector<report::ChartLine> Lines(const std::vector<TimelinePoint>& points, double t0,
                                     const Field& field, const std::string& all = "",
                                     double fresh_s = 0) {
  std::map<std::string, report::ChartLine> by_node;
  report::ChartLine sum{all, {}};
  std::map<std::string, std::pair<double, double>> latest;  // node -> (t, value)
  for (const TimelinePoint& p : points) {
    const double t = p.unix_s - t0, v = field(p);
    by_node[p.node].name = p.node;
    by_node[p.node].points.emplace_back(t, v);
    latest[p.node] = {t, v};
    double total = 0;
    for (const auto& [node, tv] : latest)
      if (fresh_s <= 0 || t - tv.first <= fresh_s) total += tv.second;
    sum.points.emplace_back(t, total);
  }
  std::vector<report::ChartLine> lines;
  if (!all.empty()) lines.push_back(std::move(sum));
  for (auto& [node, line] : by_node) lines.push_back(std::move(line));
  return lines;
}

// Rows of a JSON object's scalar members: key, value.
std::string Rows(const json::object& o) {
  std::string rows;
  for (const auto& [k, v] : o) {
    if (v.is_object() || v.is_array()) continue;
    const std::string text = v.is_string()   ? std::string(v.as_string())
                             : v.is_double() ? fmt::format("{:.1f}", v.as_double())
                                             : json::serialize(v);
    rows += "<tr><td>" + report::HtmlEscape(std::string(k)) + "</td><td>" +
            report::HtmlEscape(text) + "</td></tr>\n";
  }
  return rows;
}

std::string NodeTable(const json::object& collected,
                      const std::vector<TimelinePoint>& points, double t0) {
  std::map<std::string, double> last_point;
  for (const TimelinePoint& p : points) last_point[p.node] = p.unix_s - t0;
  std::string t =
      "<table><tr><th>node</th><th>alive</th><th>shards</th><th>leases</th>"
      "<th>pages</th><th>pages/s</th><th>sent</th><th>received</th><th>queued</th>"
      "<th>committed</th><th>last point</th></tr>\n";
  for (const json::value& v : collected.at("nodes").as_array()) {
    const json::object& n = v.as_object();
    auto num = [&](const char* k) {
      const json::value* x = n.if_contains(k);
      return x != nullptr && x->is_number() ? x->to_number<double>() : 0.0;
    };
    const std::string name = json::value_to<std::string>(n.at("node"));
    // Not alive once the job is done: it exited (its liveness key expires
    // 3 heartbeats after its last).
    const bool alive = n.at("alive").as_bool(), done = collected.at("done").as_bool();
    t += "<tr><td>" + report::HtmlEscape(name) + "</td><td>" +
         (alive  ? "alive"
          : done ? "exited"
                 : "DEAD") +
         "</td><td>" + report::Count(num("shards")) + "</td><td>" +
         report::Count(num("leases")) + "</td><td>" + report::Count(num("pages")) +
         "</td><td>" + fmt::format("{:.1f}", num("pages_per_s")) + "</td><td>" +
         report::Count(num("urls_sent")) + "</td><td>" +
         report::Count(num("urls_received")) + "</td><td>" +
         report::Count(num("urls_queued")) + "</td><td>" +
         report::Count(num("committed")) + "</td><td>" +
         (last_point.count(name) ? fmt::format("{:.0f} s", last_point[name]) : "none") +
         "</td></tr>\n";
  }
  return t + "</table>\n";
}

std::string Charts(const std::vector<TimelinePoint>& points, double t0) {
  auto count = [](double v) { return report::Count(v); };
  auto u = [](uint64_t report::ClusterReport::*m) -> Field {
    return [m](const TimelinePoint& p) { return static_cast<double>(p.figures.*m); };
  };
  std::string html;
  html += report::LineChart(
      "pages fetched", Lines(points, t0, u(&report::ClusterReport::pages), "all nodes"),
      count);
  html += report::LineChart(
      "pages/s (last minute)",
      Lines(
          points, t0, [](const TimelinePoint& p) { return p.figures.pages_per_s; },
          "all nodes", 60),
      [](double v) { return fmt::format("{:.1f}", v); });
  html +=
      report::LineChart("URLs waiting to be sent",
                        Lines(points, t0, u(&report::ClusterReport::urls_queued)), count);
  if (std::any_of(points.begin(), points.end(), [](const TimelinePoint& p) {
        return !p.load.empty() && p.load != "-";
      }))
    html += report::LineChart("backlog: URLs queued in the held shards",
                              Lines(points, t0,
                                    [](const TimelinePoint& p) {
                                      return p.load.empty() || p.load == "-"
                                                 ? 0.0
                                                 : std::strtod(p.load.c_str(), nullptr);
                                    }),
                              count);
  html += report::LineChart(
      "leases held",
      Lines(points, t0, u(&report::ClusterReport::leases_held), "all nodes", 60), count);
  html += report::LineChart(
      "URLs sent to other nodes",
      Lines(points, t0, u(&report::ClusterReport::urls_sent), "all nodes"), count);
  html += report::LineChart(
      "URLs received from other nodes",
      Lines(points, t0, u(&report::ClusterReport::urls_received), "all nodes"), count);
  report::ChartLine memory{"used_memory", {}};
  for (const TimelinePoint& p : points)
    memory.points.emplace_back(p.unix_s - t0, static_cast<double>(p.redis_bytes));
  html += report::LineChart("Redis memory (bytes)", {memory}, count);
  html += report::LineChart(
      "sends Redis refused (full)",
      Lines(points, t0, u(&report::ClusterReport::sends_refused), "all nodes"), count);
  std::vector<report::ChartLine> events;
  for (const auto& [name, m] :
       std::vector<std::pair<std::string, uint64_t report::ClusterReport::*>>{
           {"takeovers (shard loads)", &report::ClusterReport::shard_loads},
           {"handoffs (shards given)", &report::ClusterReport::shards_given},
           {"lease losses", &report::ClusterReport::lease_losses},
           {"Redis reconnects", &report::ClusterReport::redis_reconnects}}) {
    report::ChartLine l = Lines(points, t0, u(m), name).front();
    events.push_back(std::move(l));
  }
  html += report::LineChart("events, all nodes (counts so far)", events, count);
  return html;
}

}  // namespace

std::string TimelineHtml(const json::object& collected,
                         const std::vector<TimelinePoint>& points) {
  const double t0 = points.empty() ? 0 : points.front().unix_s;
  const std::string job = json::value_to<std::string>(collected.at("job"));
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>crawler "
      "cluster " +
      report::HtmlEscape(job) +
      "</title>\n"
      "<style>body{font:14px/1.4 sans-serif;margin:24px;color:#222}h1{font-size:20px}"
      "h2{font-size:16px;margin-top:24px}table{border-collapse:collapse}"
      "td,th{border-bottom:1px solid #e3e3ea;padding:4px 12px 4px 0;text-align:left}"
      "figure{display:inline-block;margin:8px}</style>\n</head><body>\n<h1>crawler "
      "cluster job " +
      report::HtmlEscape(job) + "</h1>\n<p>Redis " +
      report::HtmlEscape(json::value_to<std::string>(collected.at("redis"))) + ": " +
      (collected.at("done").as_bool() ? "done" : "running") + "; " +
      std::to_string(points.size()) + " points on the time line, over " +
      fmt::format("{:.0f}", points.empty() ? 0.0 : points.back().unix_s - t0) +
      " s</p>\n<h2>Nodes</h2>\n" + NodeTable(collected, points, t0);
  for (const char* part : {"totals", "leases", "streams", "memory"}) {
    const json::value* v = collected.if_contains(part);
    if (v != nullptr && v->is_object())
      html += "<h2>" + std::string(part) + "</h2>\n<table>\n" + Rows(v->as_object()) +
              "</table>\n";
  }
  html += "<h2>Over the crawl</h2>\n" + Charts(points, t0) + "</body></html>\n";
  return html;
}

}  // namespace crawler::cluster
