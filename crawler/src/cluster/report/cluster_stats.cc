// `crawler cluster-stats redis://HOST:PORT --job J [--json]`: the whole job
// as Redis sees it. Reads only. See cluster/entry.h.
#include <fmt/core.h>

#include <algorithm>
#include <boost/json.hpp>
#include <map>
#include <string>
#include <vector>

#include "cluster/entry.h"
#include "cluster/membership/shard_owners.h"
#include "cluster/redis/redis.h"
#include "cluster/report/timeline.h"
#include "output/json_fields.h"
#include "report/stats_schema.h"

namespace crawler::cluster {
namespace {

namespace json = boost::json;

constexpr uint64_t kMinUrlsForRatio = 5000;

struct ShardFigures {
  uint64_t entries = 0, pending = 0, lag = 0, bytes = 0;
};

// XINFO GROUPS' "owners" group: its pending and lag (Redis 7).
void ReadGroup(ReplyView r, ShardFigures* f) {
  for (size_t g = 0; g < r.size(); ++g) {
    std::map<std::string, ReplyView> fields;
    r[g].ForEachPair([&](ReplyView k, ReplyView v) { fields[k.str()] = v; });
    if (fields["name"].str() != "owners") continue;
    auto num = [&](const char* k) -> uint64_t {
      auto it = fields.find(k);
      return it != fields.end() ? it->second.count() : 0;
    };
    f->pending = num("pending");
    f->lag = num("lag");
  }
}

uint64_t U(const json::object& o, const char* key) {
  return o.at(key).to_number<uint64_t>();
}
double D(const json::object& o, const char* key) { return o.at(key).to_number<double>(); }
std::string S(const json::object& o, const char* key) {
  return json::value_to<std::string>(o.at(key));
}

std::string ReportText(const json::object& o) {
  std::string out = fmt::format("cluster job {} at {}: {}\n", S(o, "job"), S(o, "redis"),
                                o.at("done").as_bool() ? "done" : "running");
  out += "\nNodes\n";
  for (const json::value& v : o.at("nodes").as_array()) {
    const json::object& n = v.as_object();
    out += fmt::format(
        "  {:<12} {:<5} {:4} shards {:4} leases  {:10} pages  {:8.1f} pages/s  sent {}  "
        "received {}  queued {}  commit {}{}\n",
        S(n, "node"), n.at("alive").as_bool() ? "alive" : "DEAD", U(n, "shards"),
        U(n, "leases"), U(n, "pages"), D(n, "pages_per_s"), U(n, "urls_sent"),
        U(n, "urls_received"), U(n, "urls_queued"), U(n, "committed"),
        D(n, "redis_down_s") > 0 ? "  (redis down)" : "");
  }
  const json::object& t = o.at("totals").as_object();
  out += fmt::format("\nTotals\n  {} pages, {:.1f} pages/s\n", U(t, "pages"),
                     D(t, "pages_per_s"));
  const json::object& l = o.at("leases").as_object();
  const json::array& waiting = l.at("waiting").as_array();
  out +=
      fmt::format("\nLeases\n  {} held, epochs up to {}; {} shards with no live lease\n",
                  U(l, "held"), U(l, "max_epoch"), waiting.size());
  for (size_t i = 0; i < waiting.size() && i < 10; ++i) {
    const json::object& w = waiting[i].as_object();
    std::string last = S(w, "last_holder");
    std::string source = S(w, "source");
    if (size_t sp = source.find(' '); sp != std::string::npos)
      source = source.substr(0, sp) + " checkpoint" + source.substr(sp);
    out += fmt::format("  shard {} waits: {}{} (epoch {}){}{}\n", U(w, "shard"),
                       last.empty() ? "never held" : "last held by ", last, U(w, "epoch"),
                       source.empty() ? "" : "; its state: ", source);
  }
  if (waiting.size() > 10)
    out += "  ... and " + std::to_string(waiting.size() - 10) + " more\n";
  const json::object& s = o.at("streams").as_object();
  out += fmt::format(
      "\nStreams ({} shards)\n  {} entries held, {} delivered and not yet "
      "acknowledged, lag {} (max {}, shard {})\n  batches sent {}, delivered {}\n",
      U(s, "shards"), U(s, "entries"), U(s, "pending"), U(s, "lag"), U(s, "max_lag"),
      U(s, "max_lag_shard"), U(s, "batches_sent"), U(s, "batches_delivered"));
  const json::object& m = o.at("memory").as_object();
  const uint64_t in_flight = U(m, "urls_in_flight");
  out += fmt::format(
      "\nRedis memory\n  used {:.1f} MB; streams {:.1f} kB for ~{} URLs in flight ",
      D(m, "used_bytes") / 1e6, D(m, "stream_bytes") / 1e3, in_flight);
  // Below a few thousand URLs the streams' fixed overhead is all one sees.
  if (in_flight >= kMinUrlsForRatio) {
    out += fmt::format("({:.1f} bytes per URL)\n", D(m, "bytes_per_url"));
  } else {
    out += "(too few for a bytes-per-URL figure)\n";
  }
  return out;
}

// The report's reads, one pipeline: the nodes' figures, the job's counters,
// Redis's memory; each node's liveness; each shard's stream (length, group,
// memory), then its lease (lease, epoch, holder, source); the commits.
std::vector<std::vector<std::string>> ReportCommands(
    const std::string& prefix, const std::vector<std::string>& nodes, uint32_t shards) {
  std::vector<std::vector<std::string>> cmds = {{"HGETALL", prefix + "stats"},
                                                {"GET", prefix + "sent"},
                                                {"GET", prefix + "delivered"},
                                                {"EXISTS", prefix + "done"},
                                                {"INFO", "memory"}};
  for (const std::string& n : nodes) cmds.push_back({"EXISTS", prefix + "alive:" + n});
  for (uint32_t s = 0; s < shards; ++s) {
    std::string key = prefix + "s:" + std::to_string(s);
    cmds.push_back({"XLEN", key});
    cmds.push_back({"XINFO", "GROUPS", key});
    cmds.push_back({"MEMORY", "USAGE", key, "SAMPLES", "0"});
  }
  for (uint32_t s = 0; s < shards; ++s) {
    cmds.push_back({"GET", prefix + "lease:" + std::to_string(s)});
    cmds.push_back({"GET", prefix + "epoch:" + std::to_string(s)});
    cmds.push_back({"HGET", prefix + "holder", std::to_string(s)});
    cmds.push_back({"HGET", prefix + "source", std::to_string(s)});
  }
  cmds.push_back({"HGETALL", prefix + "commits"});  // cluster.shared_dir
  cmds.push_back({"HGETALL", prefix + "assign"});   // work-aware placement
  return cmds;
}

// The shards' streams, from rep[base...] (3 replies a shard): "streams"
// less the job's counters; `*total` for the memory figures.
json::object StreamFigures(const std::vector<RedisReply>& rep, size_t base,
                           uint32_t shards, ShardFigures* total) {
  uint64_t max_lag = 0, max_lag_shard = 0;
  for (uint32_t s = 0; s < shards; ++s) {
    ShardFigures f;
    f.entries = static_cast<uint64_t>(std::max<long long>(0, rep[base + 3 * s].Int()));
    ReadGroup(rep[base + 3 * s + 1].view(), &f);
    f.bytes = static_cast<uint64_t>(std::max<long long>(0, rep[base + 3 * s + 2].Int()));
    total->entries += f.entries;
    total->pending += f.pending;
    total->lag += f.lag;
    total->bytes += f.bytes;
    if (f.lag > max_lag) {
      max_lag = f.lag;
      max_lag_shard = s;
    }
  }
  return json::object{{"shards", shards},          {"entries", total->entries},
                      {"pending", total->pending}, {"lag", total->lag},
                      {"max_lag", max_lag},        {"max_lag_shard", max_lag_shard}};
}

// The shards' leases, from rep[base...] (4 replies a shard): "NODE EPOCH"
// while live; a shard without one waits for a node. `*leases_of`: by node.
json::object LeaseFigures(const std::vector<RedisReply>& rep, size_t base,
                          uint32_t shards, std::map<std::string, uint64_t>* leases_of) {
  uint64_t held = 0, max_epoch = 0;
  json::array waiting;
  for (uint32_t s = 0; s < shards; ++s) {
    std::string lease = rep[base + 4 * s].Str();
    uint64_t epoch = static_cast<uint64_t>(
        std::strtoull(rep[base + 4 * s + 1].Str().c_str(), nullptr, 10));
    max_epoch = std::max(max_epoch, epoch);
    if (!rep[base + 4 * s].IsNil()) {
      ++held;
      ++(*leases_of)[lease.substr(0, lease.find(' '))];
      continue;
    }
    std::string last = rep[base + 4 * s + 2].Str();
    std::string source = rep[base + 4 * s + 3].Str();
    waiting.push_back(
        json::object{{"shard", s},
                     {"epoch", epoch},
                     {"last_holder", last.substr(0, last.find(' '))},
                     {"source", source}});  // "NODE SEQ": where a taker loads it from
  }
  return json::object{{"held", held}, {"max_epoch", max_epoch}, {"waiting", waiting}};
}

// The nodes, each with its own figures (as it last published them) and
// what Redis says of it; `*sum`: their sums.
json::array NodeFigures(const std::vector<RedisReply>& rep,
                        const std::vector<std::string>& nodes, uint32_t shards,
                        const std::vector<uint32_t>& weights,
                        const std::map<std::string, uint64_t>& leases_of,
                        report::ClusterReport* sum) {
  std::map<std::string, report::ClusterReport> reports;
  rep[0].view().ForEachPair([&](ReplyView node, ReplyView figures) {
    boost::system::error_code ec;
    json::value v = json::parse(figures.str(), ec);
    if (!ec)
      reports[node.str()] = output::json_fields::ReadLenient<report::ClusterReport>(v);
  });
  // Where the placement puts each shard over all the job's nodes, unless
  // work-aware placement gave it to a live node (assign), and with how many
  // seed hosts (shard_owners.h).
  std::vector<uint32_t> owned(nodes.size(), 0);
  std::vector<uint64_t> seed_hosts(nodes.size(), 0);
  std::vector<uint32_t> owner = PlaceShards(nodes, weights, shards);
  rep.back().view().ForEachPair([&](ReplyView shard, ReplyView node) {
    const uint64_t s = std::strtoull(shard.str().c_str(), nullptr, 10);
    auto to = std::find(nodes.begin(), nodes.end(), node.str());
    const size_t at = static_cast<size_t>(to - nodes.begin());
    if (s < shards && to != nodes.end() && rep[5 + at].Int() == 1)
      owner[s] = static_cast<uint32_t>(at);
  });
  for (uint32_t s = 0; s < shards; ++s) {
    ++owned[owner[s]];
    seed_hosts[owner[s]] += weights[s];
  }
  std::map<std::string, uint64_t> committed;  // node -> its last committed checkpoint
  rep[rep.size() - 2].view().ForEachPair([&](ReplyView node, ReplyView sequence) {
    committed[node.str()] = std::strtoull(sequence.str().c_str(), nullptr, 10);
  });
  json::array list;
  for (size_t i = 0; i < nodes.size(); ++i) {
    report::ClusterReport c =
        reports.count(nodes[i]) ? reports[nodes[i]] : report::ClusterReport{};
    c.node = nodes[i];
    json::object n = json::value_from(c).as_object();
    n["alive"] = rep[5 + i].Int() == 1;
    n["shards"] = owned[i];
    n["seed_hosts"] = seed_hosts[i];
    const auto held = leases_of.find(nodes[i]);
    n["leases"] = held == leases_of.end() ? 0 : held->second;
    n["committed"] = committed[nodes[i]];
    list.push_back(std::move(n));
    sum->pages += c.pages;
    sum->pages_per_s += c.pages_per_s;
    sum->urls_sent += c.urls_sent;
    sum->batches_sent += c.batches_sent;
  }
  return list;
}

Result<json::object> Collect(Redis& r, const std::string& job) {
  const std::string prefix = "crawler:{" + job + "}:";
  auto meta = r.Command({"HMGET", prefix + "meta", "shards", "weights"});
  if (!meta.ok()) return meta.status();
  const ReplyView fields = meta->view();
  if (fields.size() != 2 || fields[0].nil())
    return Status::Error(Status::Code::kInvalidArgument,
                         "no cluster job '" + job + "' at " + r.address().Text());
  const uint32_t shards =
      static_cast<uint32_t>(std::strtoul(fields[0].str().c_str(), nullptr, 10));
  const std::vector<uint32_t> weights = DecodeWeights(fields[1].str(), shards);
  auto members = r.Command({"SMEMBERS", prefix + "nodes"});
  if (!members.ok()) return members.status();
  std::vector<std::string> nodes = members->view().strings();
  std::sort(nodes.begin(), nodes.end());
  auto replies = r.Pipeline(ReportCommands(prefix, nodes, shards));
  if (!replies.ok()) return replies.status();
  const std::vector<RedisReply>& rep = *replies;

  std::string info = rep[4].Str();
  uint64_t used = 0;
  if (size_t at = info.find("used_memory:"); at != std::string::npos)
    used = std::strtoull(info.c_str() + at + 12, nullptr, 10);
  const size_t base = 5 + nodes.size();
  ShardFigures total;
  json::object streams = StreamFigures(rep, base, shards, &total);
  streams["batches_sent"] = rep[1].Int();
  streams["batches_delivered"] = rep[2].Int();
  std::map<std::string, uint64_t> leases_of;
  json::object leases =
      LeaseFigures(rep, base + 3 * static_cast<size_t>(shards), shards, &leases_of);
  report::ClusterReport sum;
  json::array node_list = NodeFigures(rep, nodes, shards, weights, leases_of, &sum);
  double per_batch = sum.batches_sent ? static_cast<double>(sum.urls_sent) /
                                            static_cast<double>(sum.batches_sent)
                                      : 0;
  uint64_t in_flight =
      static_cast<uint64_t>(static_cast<double>(total.entries) * per_batch);
  json::object o;
  o["job"] = job;
  o["redis"] = r.address().Text();
  o["done"] = rep[3].Int() == 1;
  o["nodes"] = std::move(node_list);
  o["totals"] = json::object{{"pages", sum.pages}, {"pages_per_s", sum.pages_per_s}};
  o["leases"] = std::move(leases);
  o["streams"] = std::move(streams);
  o["memory"] =
      json::object{{"used_bytes", used},
                   {"stream_bytes", total.bytes},
                   {"urls_in_flight", in_flight},
                   {"bytes_per_url", in_flight ? static_cast<double>(total.bytes) /
                                                     static_cast<double>(in_flight)
                                               : 0.0}};
  return o;
}

}  // namespace

int RunClusterStats(const std::string& redis_url, const std::string& job, bool as_json,
                    const std::string& html_path) {
  auto address = ParseRedisUrl(redis_url, "the Redis URL given");
  if (!address.ok()) {
    std::fprintf(stderr, "crawler cluster-stats: %s\n",
                 address.status().message().c_str());
    return 2;
  }
  auto redis = Redis::Connect(*address, 5);
  if (!redis.ok()) {
    std::fprintf(stderr, "crawler cluster-stats: %s\n", redis.status().message().c_str());
    return 2;
  }
  auto o = Collect(**redis, job);
  if (!o.ok()) {
    std::fprintf(stderr, "crawler cluster-stats: %s\n", o.status().message().c_str());
    return 2;
  }
  if (as_json) {
    std::printf("%s\n", json::serialize(*o).c_str());
  } else {
    std::fputs(ReportText(*o).c_str(), stdout);
  }
  if (html_path.empty()) return 0;
  auto points = ReadTimeline(**redis, "crawler:{" + job + "}:");
  if (!points.ok()) {
    std::fprintf(stderr, "crawler cluster-stats: %s\n",
                 points.status().message().c_str());
    return 2;
  }
  const std::string html = TimelineHtml(*o, *points);
  std::FILE* f = std::fopen(html_path.c_str(), "wb");
  const bool ok =
      f != nullptr && std::fwrite(html.data(), 1, html.size(), f) == html.size();
  if (f != nullptr && std::fclose(f) != 0) return 1;
  if (!ok) {
    std::fprintf(stderr, "crawler cluster-stats: %s: cannot write\n", html_path.c_str());
    return 1;
  }
  if (!as_json)
    std::printf("\nHTML report: %s (%zu points on the time line)\n", html_path.c_str(),
                points->size());
  return 0;
}

}  // namespace crawler::cluster
