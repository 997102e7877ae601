// Config loading and validation; see crawler/config.h.
#include "crawler/config.h"

#include <arpa/inet.h>
#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <limits>
#include <regex>
#include <sstream>

#include "base/secret.h"
#include "engine/config_key.h"

namespace crawler::engine {
namespace {
using config_key::BoolKey;
using config_key::DoubleKey;
using config_key::IntKey;
using config_key::Key;
using config_key::kMax32;
using config_key::kMax64;
using config_key::StringKey;
using config_key::StringListKey;

std::vector<Key> CrawlKeys() {
  return {
      StringKey(
          "crawl", "user_agent", [](Config & c) -> auto& { return c.crawl.user_agent; },
          [](const std::string& v) {
            return v.empty() || v.find_first_of("\r\n") != std::string::npos
                       ? std::string("must be one non-empty line")
                       : std::string();
          }),
      IntKey<uint32_t>(
          "crawl", "workers", [](Config & c) -> auto& { return c.crawl.workers; }, 0,
          256),
      IntKey<uint32_t>(
          "crawl", "max_connections",
          [](Config & c) -> auto& { return c.crawl.max_connections; }, 1, 10000),
      IntKey<uint32_t>(
          "crawl", "max_depth", [](Config & c) -> auto& { return c.crawl.max_depth; }, 0,
          kMax32),
      IntKey<uint64_t>(
          "crawl", "max_pages", [](Config & c) -> auto& { return c.crawl.max_pages; }, 0,
          kMax64),
      IntKey<uint64_t>(
          "crawl", "max_pages_per_host",
          [](Config & c) -> auto& { return c.crawl.max_pages_per_host; }, 1, kMax64),
      StringListKey(
          "crawl", "scope_hosts", [](Config & c) -> auto& { return c.crawl.scope_hosts; },
          false),
      StringListKey(
          "crawl", "scope_domains",
          [](Config & c) -> auto& { return c.crawl.scope_domains; }, false),
      StringListKey(
          "crawl", "include", [](Config & c) -> auto& { return c.crawl.include; }, true),
      StringListKey(
          "crawl", "exclude", [](Config & c) -> auto& { return c.crawl.exclude; }, true),
      BoolKey(
          "crawl", "include_assets",
          [](Config & c) -> auto& { return c.crawl.include_assets; }),
      StringKey(
          "crawl", "requisites_scope",
          [](Config & c) -> auto& { return c.crawl.requisites_scope; },
          [](const std::string& v) {
            return v == "site" || v == "any" || v == "scope"
                       ? std::string()
                       : std::string("must be site, any or scope");
          }),
      StringKey(
          "crawl", "sitemaps", [](Config & c) -> auto& { return c.crawl.sitemaps; },
          [](const std::string& v) {
            return v == "off" || v == "robots" || v == "robots+default"
                       ? std::string()
                       : std::string("must be off, robots or robots+default");
          }),
      IntKey<uint32_t>(
          "crawl", "sitemap_max_depth",
          [](Config & c) -> auto& { return c.crawl.sitemap_max_depth; }, 0, 10),
      DoubleKey(
          "crawl", "max_duration_s",
          [](Config & c) -> auto& { return c.crawl.max_duration_s; }, 0, 3650 * 86400.0),
  };
}

// [crawl]'s trap guards and budgets per registered domain.
std::vector<Key> GuardKeys() {
  return {
      IntKey<uint32_t>(
          "crawl", "max_url_length",
          [](Config & c) -> auto& { return c.crawl.max_url_length; }, 0, 1u << 20),
      IntKey<uint32_t>(
          "crawl", "max_path_segments",
          [](Config & c) -> auto& { return c.crawl.max_path_segments; }, 0, 10000),
      IntKey<uint32_t>(
          "crawl", "max_repeated_segments",
          [](Config & c) -> auto& { return c.crawl.max_repeated_segments; }, 0, 10000),
      IntKey<uint32_t>(
          "crawl", "max_query_params",
          [](Config & c) -> auto& { return c.crawl.max_query_params; }, 0, 100000),
      IntKey<uint64_t>(
          "crawl", "max_pages_per_domain",
          [](Config & c) -> auto& { return c.crawl.max_pages_per_domain; }, 0, kMax64),
      IntKey<uint64_t>(
          "crawl", "max_urls_per_domain",
          [](Config & c) -> auto& { return c.crawl.max_urls_per_domain; }, 0, kMax64),
      IntKey<uint64_t>(
          "crawl", "domain_budget",
          [](Config & c) -> auto& { return c.crawl.domain_budget; }, 0, kMax64),
      IntKey<uint64_t>(
          "crawl", "domain_budget_per_linker",
          [](Config & c) -> auto& { return c.crawl.domain_budget_per_linker; }, 0,
          kMax64),
      IntKey<uint64_t>(
          "crawl", "domain_budget_max",
          [](Config & c) -> auto& { return c.crawl.domain_budget_max; }, 0, kMax64)};
}

// The crawler's DNS (crawler/resolver.h).
std::vector<Key> DnsKeys() {
  return {
      StringListKey(
          "fetch", "dns_servers", [](Config & c) -> auto& { return c.fetch.dns_servers; },
          false),
      DoubleKey(
          "fetch", "dns_min_ttl_s",
          [](Config & c) -> auto& { return c.fetch.dns_min_ttl_s; }, 0, 7 * 86400.0),
      DoubleKey(
          "fetch", "dns_max_ttl_s",
          [](Config & c) -> auto& { return c.fetch.dns_max_ttl_s; }, 0, 7 * 86400.0),
      DoubleKey(
          "fetch", "dns_negative_ttl_s",
          [](Config & c) -> auto& { return c.fetch.dns_negative_ttl_s; }, 0, 7 * 86400.0),
      DoubleKey(
          "fetch", "dns_timeout_s",
          [](Config & c) -> auto& { return c.fetch.dns_timeout_s; }, 0.01, 60, true),
      StringKey(
          "fetch", "ipv6", [](Config & c) -> auto& { return c.fetch.ipv6; },
          [](const std::string& v) {
            return v == "auto" || v == "on" || v == "off"
                       ? std::string()
                       : std::string("must be auto, on or off");
          }),
      DoubleKey(
          "fetch", "dns_retry_s", [](Config & c) -> auto& { return c.fetch.dns_retry_s; },
          0, 7 * 86400.0)};
}

std::vector<Key> FetchKeys() {
  return {
      DoubleKey(
          "fetch", "connect_timeout_s",
          [](Config & c) -> auto& { return c.fetch.connect_timeout_s; }, 0, 3600, true),
      DoubleKey(
          "fetch", "timeout_s", [](Config & c) -> auto& { return c.fetch.timeout_s; }, 0,
          86400, true),
      IntKey<uint64_t>(
          "fetch", "low_speed_bytes",
          [](Config & c) -> auto& { return c.fetch.low_speed_bytes; }, 0, kMax64),
      DoubleKey(
          "fetch", "low_speed_time_s",
          [](Config & c) -> auto& { return c.fetch.low_speed_time_s; }, 0, 86400),
      IntKey<uint64_t>(
          "fetch", "max_body_bytes",
          [](Config & c) -> auto& { return c.fetch.max_body_bytes; }, 1, kMax64),
      IntKey<uint64_t>(
          "fetch", "spool_body_bytes",
          [](Config & c) -> auto& { return c.fetch.spool_body_bytes; }, 0, kMax64),
      IntKey<uint32_t>(
          "fetch", "max_redirects",
          [](Config & c) -> auto& { return c.fetch.max_redirects; }, 0, 100),
      DoubleKey(
          "fetch", "robots_cache_s",
          [](Config & c) -> auto& { return c.fetch.robots_cache_s; }, 0, 365 * 86400.0),
      StringListKey(
          "fetch", "resolve", [](Config & c) -> auto& { return c.fetch.resolve; }, false),
      IntKey<uint32_t>(
          "fetch", "max_retries", [](Config & c) -> auto& { return c.fetch.max_retries; },
          0, 100),
      DoubleKey(
          "fetch", "retry_base_s",
          [](Config & c) -> auto& { return c.fetch.retry_base_s; }, 0, 3600),
      DoubleKey(
          "fetch", "retry_max_s", [](Config & c) -> auto& { return c.fetch.retry_max_s; },
          0, 86400),
      StringKey(
          "fetch", "ca_file", [](Config & c) -> auto& { return c.fetch.ca_file; },
          [](const std::string& v) {
            return v.empty() || std::filesystem::is_regular_file(v)
                       ? std::string()
                       : "no such file: '" + v + "'";
          }),
      BoolKey(
          "fetch", "insecure", [](Config & c) -> auto& { return c.fetch.insecure; }),
      StringKey(
          "fetch", "proxy", [](Config & c) -> auto& { return c.fetch.proxy; },
          [](const std::string& v) {
            for (const char* scheme : {"http://", "https://", "socks4://", "socks4a://",
                                       "socks5://", "socks5h://"}) {
              if (v.empty() || v.rfind(scheme, 0) == 0) return std::string();
            }
            return std::string(
                "must be a URL starting http://, https://, socks4://, socks4a://, "
                "socks5:// or socks5h://");
          }),
  };
}

std::vector<Key> FrontierKeys() {
  return {
      IntKey<uint64_t>(
          "frontier", "max_memory_urls",
          [](Config & c) -> auto& { return c.frontier.max_memory_urls; }, 1, kMax64),
      DoubleKey(
          "frontier", "min_delay_s",
          [](Config & c) -> auto& { return c.frontier.min_delay_s; }, 0, 86400),
      DoubleKey(
          "frontier", "max_crawl_delay_s",
          [](Config & c) -> auto& { return c.frontier.max_crawl_delay_s; }, 0, 86400),
      DoubleKey(
          "frontier", "response_factor",
          [](Config & c) -> auto& { return c.frontier.response_factor; }, 0, 1000),
      IntKey<uint32_t>(
          "frontier", "max_connections_per_host",
          [](Config & c) -> auto& { return c.frontier.max_connections_per_host; }, 1,
          1000),
      BoolKey(
          "frontier", "most_work_first",
          [](Config & c) -> auto& { return c.frontier.most_work_first; }),
      DoubleKey(
          "frontier", "backoff_min_s",
          [](Config & c) -> auto& { return c.frontier.backoff_min_s; }, 0, 86400),
      DoubleKey(
          "frontier", "backoff_max_s",
          [](Config & c) -> auto& { return c.frontier.backoff_max_s; }, 0, 86400),
      IntKey<uint32_t>(
          "frontier", "park_after",
          [](Config & c) -> auto& { return c.frontier.park_after; }, 0, 1000000),
      DoubleKey(
          "frontier", "park_s", [](Config & c) -> auto& { return c.frontier.park_s; }, 0,
          86400),
      // -1: min_delay_s / 4; 0: 4 x max_connections_per_host (frontier.h).
      DoubleKey(
          "frontier", "min_delay_ip_s",
          [](Config & c) -> auto& { return c.frontier.min_delay_ip_s; }, -1, 86400),
      IntKey<uint32_t>(
          "frontier", "max_connections_per_ip",
          [](Config & c) -> auto& { return c.frontier.max_connections_per_ip; }, 0,
          100000),
  };
}

std::vector<Key> DedupKeys() {
  return {
      StringKey(
          "dedup", "type", [](Config & c) -> auto& { return c.dedup_type_name; },
          [](const std::string& v) {
            return dedup::ParseFilterType(v).ok()
                       ? std::string()
                       : std::string("must be bloom, cuckoo or counting");
          }),
      IntKey<uint64_t>(
          "dedup", "capacity", [](Config & c) -> auto& { return c.dedup.capacity; }, 1,
          int64_t{1} << 40),
      DoubleKey(
          "dedup", "error_rate", [](Config & c) -> auto& { return c.dedup.error_rate; },
          1e-9, 0.5),
      DoubleKey(
          "dedup", "expansion", [](Config & c) -> auto& { return c.dedup.expansion; },
          1.1, 16),
      DoubleKey(
          "dedup", "tightening", [](Config & c) -> auto& { return c.dedup.tightening; },
          0.05, 0.99),
      BoolKey(
          "dedup", "scaling", [](Config & c) -> auto& { return c.dedup.scaling; }),
      IntKey<uint32_t>(
          "dedup", "stripes", [](Config & c) -> auto& { return c.dedup.stripes; }, 1,
          65536),
      BoolKey(
          "dedup", "allow_erase",
          [](Config & c) -> auto& { return c.dedup.allow_erase; }),
      DoubleKey(
          "dedup", "compact_growth",
          [](Config & c) -> auto& { return c.dedup_compact_growth; }, 0, 16),
      BoolKey(
          "dedup", "payload", [](Config & c) -> auto& { return c.dedup_payload; }),
      IntKey<uint64_t>(
          "dedup", "payload_min_bytes",
          [](Config & c) -> auto& { return c.dedup_payload_min_bytes; }, 0, kMax64),
      StringListKey(
          "dedup", "from", [](Config & c) -> auto& { return c.dedup_from; }, false),
  };
}

std::vector<Key> UrlKeys() {
  return {
      BoolKey(
          "url", "sort_query", [](Config & c) -> auto& { return c.url.sort_query; }),
      BoolKey(
          "url", "strip_tracking",
          [](Config & c) -> auto& { return c.url.strip_tracking; }),
      BoolKey(
          "url", "strip_session_ids",
          [](Config & c) -> auto& { return c.url.strip_session_ids; }),
      BoolKey(
          "url", "strip_www", [](Config & c) -> auto& { return c.url.strip_www; }),
      IntKey<size_t>(
          "url", "max_length", [](Config & c) -> auto& { return c.url.max_length; }, 16,
          1 << 20),
  };
}

std::vector<Key> OutputKeys() {
  return {
      IntKey<uint64_t>(
          "output", "warc_rotate_bytes",
          [](Config & c) -> auto& { return c.output.warc_rotate_bytes; }, 1 << 20,
          kMax64),
      StringKey(
          "output", "warc_prefix",
          [](Config & c) -> auto& { return c.output.warc_prefix; },
          [](const std::string& v) {
            return v.empty() || v.find_first_of("/\\ ") != std::string::npos
                       ? std::string("must be a file name prefix without '/' or spaces")
                       : std::string();
          }),
      IntKey<int>(
          "output", "warc_gzip_level",
          [](Config & c) -> auto& { return c.output.warc_gzip_level; }, 1, 12),
      BoolKey(
          "output", "cdxj", [](Config & c) -> auto& { return c.output.cdxj; }),
  };
}

std::vector<Key> CheckpointKeys() {
  return {
      DoubleKey(
          "checkpoint", "interval_s",
          [](Config & c) -> auto& { return c.checkpoint.interval_s; }, 0, 365 * 86400.0),
      DoubleKey(
          "checkpoint", "stop_grace_s",
          [](Config & c) -> auto& { return c.checkpoint.stop_grace_s; }, 0, 3600),
      IntKey<uint64_t>(
          "checkpoint", "interval_pages",
          [](Config & c) -> auto& { return c.checkpoint.interval_pages; }, 0, kMax64),
  };
}

const std::vector<Key>& Schema() {
  static const std::vector<Key> keys = [] {
    std::vector<Key> all;
    for (auto part :
         {CrawlKeys, GuardKeys, FetchKeys, DnsKeys, FrontierKeys, DedupKeys, UrlKeys,
          OutputKeys, CheckpointKeys, config_key::ClusterKeys, config_key::MetricsKeys,
          config_key::RecrawlKeys, config_key::BrowserKeys}) {
      for (Key& k : part()) all.push_back(std::move(k));
    }
    return all;
  }();
  return keys;
}

const Key* FindKey(std::string_view section, std::string_view name) {
  for (const Key& k : Schema()) {
    if (k.section == section && k.name == name) return &k;
  }
  return nullptr;
}

Status ConfigError(const std::string& where, const std::string& key,
                   const std::string& problem) {
  return Status::Error(Status::Code::kInvalidArgument,
                       where + ": " + key + ": " + problem);
}

std::string Where(const std::string& path, const toml::node& n) {
  return path + ":" + std::to_string(n.source().begin.line);
}

// [dedup]'s cross-key checks, and the filter type derived from its name.
Status FinishDedup(Config& c) {
  c.dedup.type = dedup::ParseFilterType(c.dedup_type_name).value();
  Status st = dedup::ValidateOptions(c.dedup);
  if (!st.ok()) return ConfigError("config", "dedup", st.message());
  if (c.dedup_compact_growth != 0 && c.dedup_compact_growth < 1.1) {
    return ConfigError("config", "dedup.compact_growth",
                       "must be 0 (never compact) or in [1.1, 16], got " +
                           std::to_string(c.dedup_compact_growth));
  }
  if (!c.dedup_from.empty() && !c.dedup_payload) {
    return ConfigError("config", "dedup.from",
                       "needs dedup.payload = true (the earlier crawls' payloads are "
                       "looked up as this crawl's own are)");
  }
  return Status::Ok();
}

// Sentinels: HOST:PORT each, with their primary's name, instead of
// cluster.redis.
Status FinishSentinels(const ClusterConfig& c) {
  if (c.sentinels.empty()) {
    if (!c.sentinel_master.empty())
      return ConfigError("config", "cluster.sentinel_master",
                         "needs cluster.sentinels (the sentinels that know it)");
    return Status::Ok();
  }
  if (!c.redis.empty())
    return ConfigError("config", "cluster.sentinels",
                       "set with cluster.redis: name the primary one way, either "
                       "cluster.redis or cluster.sentinels with cluster.sentinel_master");
  if (c.sentinel_master.empty())
    return ConfigError("config", "cluster.sentinel_master",
                       "required with cluster.sentinels (the name the sentinels "
                       "monitor, as in 'sentinel monitor NAME ...')");
  for (const std::string& s : c.sentinels) {
    if (!config_key::IsHostPort(s, 1))
      return ConfigError("config", "cluster.sentinels",
                         "'" + s + "' is not HOST:PORT (as 127.0.0.1:26379)");
  }
  return Status::Ok();
}

// Cross-key checks and derived values, after every key is applied.
Status Finish(Config& c) {
  Status st = FinishDedup(c);
  if (!st.ok()) return st;
  st = FinishSentinels(c.cluster);
  if (!st.ok()) return st;
  if (c.cluster.enabled() && c.cluster.node.empty()) {
    return ConfigError("config", "cluster.node",
                       "required when cluster.redis or cluster.sentinels is set (a "
                       "stable name per machine)");
  }
  if (c.cluster.lease_s < 3 * c.cluster.heartbeat_s) {
    return ConfigError("config", "cluster.lease_s",
                       "must be at least 3 x cluster.heartbeat_s (leases are renewed at "
                       "each heartbeat)");
  }
  for (const std::string& r : c.fetch.resolve) {
    // HOST:PORT:ADDRESS (curl --resolve); an IPv6 address goes in brackets.
    size_t a = r.find(':'), b = a == std::string::npos ? a : r.find(':', a + 1);
    std::string port = b == std::string::npos ? "" : r.substr(a + 1, b - a - 1);
    if (a == 0 || b == std::string::npos || b + 1 >= r.size() || port.empty() ||
        port.find_first_not_of("0123456789") != std::string::npos) {
      return ConfigError("config", "fetch.resolve",
                         "'" + r + "' is not HOST:PORT:ADDRESS (as curl --resolve)");
    }
  }
  for (const std::string& server : c.fetch.dns_servers) {
    // ADDRESS or ADDRESS:PORT, [V6] or [V6]:PORT (c-ares's server form).
    std::string host = server, port;
    if (!host.empty() && host[0] == '[') {
      size_t close = host.find(']');
      port =
          close == std::string::npos || close + 1 >= host.size() || host[close + 1] != ':'
              ? ""
              : host.substr(close + 2);
      host = close == std::string::npos ? "" : host.substr(1, close - 1);
    } else if (size_t colon = host.find(':'); colon != std::string::npos) {
      port = host.substr(colon + 1);
      host = host.substr(0, colon);
    }
    in6_addr scratch{};
    bool address = inet_pton(AF_INET, host.c_str(), &scratch) == 1 ||
                   inet_pton(AF_INET6, host.c_str(), &scratch) == 1;
    bool port_ok =
        port.empty() ||
        (port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos &&
         std::stoul(port) <= 65535);
    if (!address || !port_ok ||
        (server.find(':') != std::string::npos && port.empty() && server[0] == '[' &&
         server.back() != ']')) {
      return ConfigError("config", "fetch.dns_servers",
                         "'" + server +
                             "' is not ADDRESS or ADDRESS:PORT (as 127.0.0.1:5353 or "
                             "[::1]:53; a name server is given by address)");
    }
  }
  if (c.frontier.min_delay_ip_s < 0 && c.frontier.min_delay_ip_s != -1) {
    return ConfigError("config", "frontier.min_delay_ip_s",
                       "must be -1 (a quarter of min_delay_s) or at least 0");
  }
  if (c.fetch.dns_min_ttl_s > c.fetch.dns_max_ttl_s) {
    return ConfigError("config", "fetch.dns_min_ttl_s",
                       "must not be above fetch.dns_max_ttl_s");
  }
  const RecrawlConfig& r = c.recrawl;
  if (r.min_interval_s > r.interval_s || r.interval_s > r.max_interval_s) {
    return ConfigError("config", "recrawl.interval_s",
                       "must be within [recrawl.min_interval_s, recrawl.max_interval_s]");
  }
  if (c.fetch.timeout_s < c.fetch.connect_timeout_s) {
    return ConfigError("config", "fetch.timeout_s",
                       "must not be below fetch.connect_timeout_s");
  }
  return Status::Ok();
}

}  // namespace

Result<Config> LoadConfig(const std::string& path,
                          const std::vector<std::string>& overrides) {
  Config c;
  if (!path.empty()) {
    toml::table doc;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      return Status::Error(
          Status::Code::kInvalidArgument,
          path + ": " +
              (std::filesystem::exists(path, ec) ? "not a file" : "no such file"));
    }
    try {
      doc = toml::parse_file(path);
    } catch (const toml::parse_error& e) {
      return Status::Error(Status::Code::kInvalidArgument,
                           path + ":" + std::to_string(e.source().begin.line) +
                               ": not valid TOML: " + std::string(e.description()));
    }
    for (auto&& [section, value] : doc) {
      const toml::table* table = value.as_table();
      if (table == nullptr) {
        return ConfigError(
            Where(path, value), std::string(section.str()),
            "unknown key (every key belongs to a section such as [crawl])");
      }
      for (auto&& [name, v] : *table) {
        std::string full = std::string(section.str()) + "." + std::string(name.str());
        const Key* key = FindKey(section.str(), name.str());
        if (key == nullptr) return ConfigError(Where(path, v), full, "unknown key");
        std::string problem = key->apply(c, v);
        if (!problem.empty()) return ConfigError(Where(path, v), full, problem);
      }
    }
  }
  for (const std::string& o : overrides) {
    size_t eq = o.find('=');
    size_t dot = o.find('.');
    if (eq == std::string::npos || dot == std::string::npos || dot > eq) {
      return Status::Error(
          Status::Code::kInvalidArgument,
          "--set " + WithoutUserinfo(o) + ": expected section.key=value");
    }
    std::string section = o.substr(0, dot), name = o.substr(dot + 1, eq - dot - 1);
    std::string text = o.substr(eq + 1);
    const Key* key = FindKey(section, name);
    if (key == nullptr)
      return ConfigError("--set " + WithoutUserinfo(o), section + "." + name,
                         "unknown key");
    std::string problem;
    try {
      toml::table t = toml::parse("v = " + text);
      problem = key->apply(c, *t.get("v"));
    } catch (const toml::parse_error&) {
      problem = key->apply(c, toml::value<std::string>(text));
    }
    if (!problem.empty())
      return ConfigError("--set " + WithoutUserinfo(o), section + "." + name, problem);
  }
  Status st = Finish(c);
  if (!st.ok()) return st;
  return c;
}

std::vector<std::pair<std::string, std::string>> ConfigEntries(
    const Config& c, const std::vector<std::string>& sections) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Key& k : Schema()) {
    if (std::find(sections.begin(), sections.end(), k.section) != sections.end())
      out.emplace_back(k.section + "." + k.name, k.dump(c));
  }
  return out;
}

std::string ConfigToToml(const Config& c) {
  std::string out;
  std::string section;
  for (const Key& k : Schema()) {
    if (k.section != section) {
      section = k.section;
      out += (out.empty() ? "[" : "\n[") + section + "]\n";
    }
    out += k.name + " = " + k.dump(c) + "\n";
  }
  return out;
}

}  // namespace crawler::engine
