// `crawler cluster-stats redis://HOST:PORT --job J [--json]`: the whole job
// as Redis sees it. Reads only. See crawler/stats_report.h.
#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/redis.h"
#include "crawler/stats_report.h"
#include "output/json_fields.h"
#include "report/stats_schema.h"

namespace crawler::engine {
namespace {

namespace json = boost::json;

constexpr uint64_t kMinUrlsForRatio = 5000;

struct ShardFigures {
  uint64_t entries = 0, pending = 0, lag = 0, bytes = 0;
};

// XINFO GROUPS' "owners" group: its pending and lag (Redis 7).
void ReadGroup(const redisReply* r, ShardFigures* f) {
  for (size_t g = 0; r != nullptr && r->type == REDIS_REPLY_ARRAY && g < r->elements;
       ++g) {
    const redisReply* group = r->element[g];
    std::map<std::string, const redisReply*> fields;
    for (size_t i = 0; group->type == REDIS_REPLY_ARRAY && i + 1 < group->elements;
         i += 2)
      fields[RedisReply::StrOf(group->element[i])] = group->element[i + 1];
    if (fields.count("name") == 0 || RedisReply::StrOf(fields["name"]) != "owners")
      continue;
    auto num = [&](const char* k) -> uint64_t {
      auto it = fields.find(k);
      return it != fields.end() && it->second->type == REDIS_REPLY_INTEGER
                 ? static_cast<uint64_t>(std::max<long long>(0, it->second->integer))
                 : 0;
    };
    f->pending = num("pending");
    f->lag = num("lag");
  }
}

// Long: the report's lines in print order (to fmt with issue 31's rewrite).
// NOLINTNEXTLINE(readability-function-size)
std::string Text(const json::object& o) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line), "cluster job %s at %s: %s\n",
                json::value_to<std::string>(o.at("job")).c_str(),
                json::value_to<std::string>(o.at("redis")).c_str(),
                o.at("done").as_bool() ? "done" : "running");
  out += line;
  out += "\nNodes\n";
  for (const json::value& v : o.at("nodes").as_array()) {
    const json::object& n = v.as_object();
    std::snprintf(
        line, sizeof(line),
        "  %-12s %-5s %4llu shards %4llu leases  %10llu pages  %8.1f pages/s  sent %llu  "
        "received %llu  queued %llu  commit %llu%s\n",
        json::value_to<std::string>(n.at("node")).c_str(),
        n.at("alive").as_bool() ? "alive" : "DEAD",
        static_cast<unsigned long long>(n.at("shards").to_number<uint64_t>()),
        static_cast<unsigned long long>(n.at("leases").to_number<uint64_t>()),
        static_cast<unsigned long long>(n.at("pages").to_number<uint64_t>()),
        n.at("pages_per_s").to_number<double>(),
        static_cast<unsigned long long>(n.at("urls_sent").to_number<uint64_t>()),
        static_cast<unsigned long long>(n.at("urls_received").to_number<uint64_t>()),
        static_cast<unsigned long long>(n.at("urls_queued").to_number<uint64_t>()),
        static_cast<unsigned long long>(n.at("committed").to_number<uint64_t>()),
        n.at("redis_down_s").to_number<double>() > 0 ? "  (redis down)" : "");
    out += line;
  }
  const json::object& t = o.at("totals").as_object();
  std::snprintf(line, sizeof(line), "\nTotals\n  %llu pages, %.1f pages/s\n",
                static_cast<unsigned long long>(t.at("pages").to_number<uint64_t>()),
                t.at("pages_per_s").to_number<double>());
  out += line;
  const json::object& l = o.at("leases").as_object();
  const json::array& waiting = l.at("waiting").as_array();
  std::snprintf(
      line, sizeof(line),
      "\nLeases\n  %llu held, epochs up to %llu; %zu shards with no live lease\n",
      static_cast<unsigned long long>(l.at("held").to_number<uint64_t>()),
      static_cast<unsigned long long>(l.at("max_epoch").to_number<uint64_t>()),
      waiting.size());
  out += line;
  for (size_t i = 0; i < waiting.size() && i < 10; ++i) {
    const json::object& w = waiting[i].as_object();
    std::string last = json::value_to<std::string>(w.at("last_holder"));
    std::string source = json::value_to<std::string>(w.at("source"));
    if (size_t sp = source.find(' '); sp != std::string::npos)
      source = source.substr(0, sp) + " checkpoint" + source.substr(sp);
    std::snprintf(line, sizeof(line), "  shard %llu waits: %s%s (epoch %llu)%s%s\n",
                  static_cast<unsigned long long>(w.at("shard").to_number<uint64_t>()),
                  last.empty() ? "never held" : "last held by ", last.c_str(),
                  static_cast<unsigned long long>(w.at("epoch").to_number<uint64_t>()),
                  source.empty() ? "" : "; its state: ", source.c_str());
    out += line;
  }
  if (waiting.size() > 10)
    out += "  ... and " + std::to_string(waiting.size() - 10) + " more\n";
  const json::object& s = o.at("streams").as_object();
  std::snprintf(
      line, sizeof(line),
      "\nStreams (%llu shards)\n  %llu entries held, %llu delivered and not yet "
      "acknowledged, lag %llu (max %llu, shard %llu)\n  batches sent %llu, delivered "
      "%llu\n",
      static_cast<unsigned long long>(s.at("shards").to_number<uint64_t>()),
      static_cast<unsigned long long>(s.at("entries").to_number<uint64_t>()),
      static_cast<unsigned long long>(s.at("pending").to_number<uint64_t>()),
      static_cast<unsigned long long>(s.at("lag").to_number<uint64_t>()),
      static_cast<unsigned long long>(s.at("max_lag").to_number<uint64_t>()),
      static_cast<unsigned long long>(s.at("max_lag_shard").to_number<uint64_t>()),
      static_cast<unsigned long long>(s.at("batches_sent").to_number<uint64_t>()),
      static_cast<unsigned long long>(s.at("batches_delivered").to_number<uint64_t>()));
  out += line;
  const json::object& m = o.at("memory").as_object();
  uint64_t in_flight = m.at("urls_in_flight").to_number<uint64_t>();
  std::snprintf(
      line, sizeof(line),
      "\nRedis memory\n  used %.1f MB; streams %.1f kB for ~%llu URLs in flight ",
      m.at("used_bytes").to_number<double>() / 1e6,
      m.at("stream_bytes").to_number<double>() / 1e3,
      static_cast<unsigned long long>(in_flight));
  out += line;
  // Below a few thousand URLs the streams' fixed overhead is all one sees.
  if (in_flight >= kMinUrlsForRatio) {
    std::snprintf(line, sizeof(line), "(%.1f bytes per URL)\n",
                  m.at("bytes_per_url").to_number<double>());
    out += line;
  } else {
    out += "(too few for a bytes-per-URL figure)\n";
  }
  return out;
}

// Long: one report's reads in the order printed; issue 31 rewrites cluster-stats.
// NOLINTNEXTLINE(readability-function-size)
Result<json::object> Collect(Redis& r, const std::string& job) {
  const std::string prefix = "crawler:{" + job + "}:";
  auto meta = r.Command({"HGET", prefix + "meta", "shards"});
  if (!meta.ok()) return meta.status();
  if (meta->IsNil())
    return Status::Error(Status::Code::kInvalidArgument,
                         "no cluster job '" + job + "' at " + r.address().Text());
  uint32_t shards = static_cast<uint32_t>(meta->Int());
  auto members = r.Command({"SMEMBERS", prefix + "nodes"});
  if (!members.ok()) return members.status();
  std::vector<std::string> nodes;
  for (size_t i = 0; members->raw() != nullptr && i < members->raw()->elements; ++i)
    nodes.push_back(RedisReply::StrOf(members->raw()->element[i]));
  std::sort(nodes.begin(), nodes.end());

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
  auto replies = r.Pipeline(cmds);
  if (!replies.ok()) return replies.status();
  const std::vector<RedisReply>& rep = *replies;

  std::map<std::string, ClusterReport> reports;
  const redisReply* all = rep[0].raw();
  for (size_t i = 0; all != nullptr && i + 1 < all->elements; i += 2) {
    boost::system::error_code ec;
    json::value v = json::parse(RedisReply::StrOf(all->element[i + 1]), ec);
    if (!ec)
      reports[RedisReply::StrOf(all->element[i])] =
          json_fields::ReadLenient<ClusterReport>(v);
  }
  std::string info = rep[4].Str();
  uint64_t used = 0;
  if (size_t at = info.find("used_memory:"); at != std::string::npos)
    used = std::strtoull(info.c_str() + at + 12, nullptr, 10);

  std::vector<uint32_t> owned(nodes.size(), 0);
  for (uint32_t s = 0; s < shards; ++s) ++owned[ShardOwner(nodes, s)];
  ShardFigures total;
  uint64_t max_lag = 0, max_lag_shard = 0;
  size_t base = 5 + nodes.size();
  for (uint32_t s = 0; s < shards; ++s) {
    ShardFigures f;
    f.entries = static_cast<uint64_t>(std::max<long long>(0, rep[base + 3 * s].Int()));
    ReadGroup(rep[base + 3 * s + 1].raw(), &f);
    f.bytes = static_cast<uint64_t>(std::max<long long>(0, rep[base + 3 * s + 2].Int()));
    total.entries += f.entries;
    total.pending += f.pending;
    total.lag += f.lag;
    total.bytes += f.bytes;
    if (f.lag > max_lag) {
      max_lag = f.lag;
      max_lag_shard = s;
    }
  }

  // Leases: "NODE EPOCH" while live; a shard without one waits for a node.
  std::map<std::string, uint64_t> leases_of;
  uint64_t held = 0, max_epoch = 0;
  json::array waiting;
  size_t lease_base = base + 3 * static_cast<size_t>(shards);
  for (uint32_t s = 0; s < shards; ++s) {
    std::string lease = rep[lease_base + 4 * s].Str();
    uint64_t epoch = static_cast<uint64_t>(
        std::strtoull(rep[lease_base + 4 * s + 1].Str().c_str(), nullptr, 10));
    max_epoch = std::max(max_epoch, epoch);
    if (!rep[lease_base + 4 * s].IsNil()) {
      ++held;
      ++leases_of[lease.substr(0, lease.find(' '))];
      continue;
    }
    std::string last = rep[lease_base + 4 * s + 2].Str();
    std::string source = rep[lease_base + 4 * s + 3].Str();
    waiting.push_back(
        json::object{{"shard", s},
                     {"epoch", epoch},
                     {"last_holder", last.substr(0, last.find(' '))},
                     {"source", source}});  // "NODE SEQ": where a taker loads it from
  }
  std::map<std::string, uint64_t> committed;  // node -> its last committed checkpoint
  const redisReply* commits = rep.back().raw();
  for (size_t i = 0; commits != nullptr && i + 1 < commits->elements; i += 2)
    committed[RedisReply::StrOf(commits->element[i])] =
        std::strtoull(RedisReply::StrOf(commits->element[i + 1]).c_str(), nullptr, 10);
  json::array node_list;
  uint64_t pages = 0, urls_sent = 0, batches_sent = 0;
  double rate = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    ClusterReport c = reports.count(nodes[i]) ? reports[nodes[i]] : ClusterReport{};
    c.node = nodes[i];
    json::object n = json::value_from(c).as_object();
    n["alive"] = rep[5 + i].Int() == 1;
    n["shards"] = owned[i];
    n["leases"] = leases_of[nodes[i]];
    n["committed"] = committed[nodes[i]];
    node_list.push_back(std::move(n));
    pages += c.pages;
    rate += c.pages_per_s;
    urls_sent += c.urls_sent;
    batches_sent += c.batches_sent;
  }
  double per_batch =
      batches_sent ? static_cast<double>(urls_sent) / static_cast<double>(batches_sent)
                   : 0;
  uint64_t in_flight =
      static_cast<uint64_t>(static_cast<double>(total.entries) * per_batch);
  json::object o;
  o["job"] = job;
  o["redis"] = r.address().Text();
  o["done"] = rep[3].Int() == 1;
  o["nodes"] = std::move(node_list);
  o["totals"] = json::object{{"pages", pages}, {"pages_per_s", rate}};
  o["leases"] =
      json::object{{"held", held}, {"max_epoch", max_epoch}, {"waiting", waiting}};
  o["streams"] = json::object{{"shards", shards},
                              {"entries", total.entries},
                              {"pending", total.pending},
                              {"lag", total.lag},
                              {"max_lag", max_lag},
                              {"max_lag_shard", max_lag_shard},
                              {"batches_sent", rep[1].Int()},
                              {"batches_delivered", rep[2].Int()}};
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

int RunClusterStats(const std::string& redis_url, const std::string& job, bool as_json) {
  auto address = ParseRedisUrl(redis_url);
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
    std::fputs(Text(*o).c_str(), stdout);
  }
  return 0;
}

}  // namespace crawler::engine
