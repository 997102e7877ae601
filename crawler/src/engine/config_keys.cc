// The [cluster], [metrics], [recrawl] and [browser] keys of the config schema
// (config_key.h; config.cc holds the rest and the cross-key checks).
#include "base/secret.h"
#include "engine/config_key.h"

namespace crawler::engine::config_key {

std::vector<Key> MetricsKeys() {
  return {StringKey(
      "metrics", "listen", [](Config & c) -> auto& { return c.metrics.listen; },
      [](const std::string& v) {
        return v.empty() || IsHostPort(v, 0)  // port 0: any free one
                   ? std::string()
                   : std::string("must be HOST:PORT (as 127.0.0.1:9464) or empty");
      })};
}

namespace {

// Redis behind Sentinel, and writes that wait for replicas.
std::vector<Key> SentinelKeys() {
  return {
      StringListKey(
          "cluster", "sentinels", [](Config & c) -> auto& { return c.cluster.sentinels; },
          false),
      StringKey(
          "cluster", "sentinel_master",
          [](Config & c) -> auto& { return c.cluster.sentinel_master; },
          [](const std::string& v) {
            return v.find_first_of(" \t\r\n") != std::string::npos
                       ? std::string("must be a name without spaces")
                       : std::string();
          }),
      IntKey<uint32_t>(
          "cluster", "wait_replicas",
          [](Config & c) -> auto& { return c.cluster.wait_replicas; }, 0, 100),
      IntKey<uint32_t>(
          "cluster", "wait_timeout_ms",
          [](Config & c) -> auto& { return c.cluster.wait_timeout_ms; }, 1, 600000),
  };
}

}  // namespace

std::vector<Key> ClusterKeys() {
  std::vector<Key> keys = {
      StringKey(
          "cluster", "redis", [](Config & c) -> auto& { return c.cluster.redis; },
          [](const std::string& v) {
            if (!v.empty() && v.rfind("redis://", 0) != 0)
              return std::string("must be redis://HOST:PORT or empty");
            // It would be written to OUT/start-config.toml, each checkpoint
            // and the logs: the password comes from the environment.
            if (v.find('@') != std::string::npos)
              return std::string("must not hold a password (") + WithoutUserinfo(v) +
                     "): it would be written to OUT/start-config.toml and every "
                     "checkpoint; set " +
                     kRedisPasswordEnv + " in the environment instead";
            return std::string();
          }),
      StringKey(
          "cluster", "job", [](Config & c) -> auto& { return c.cluster.job; },
          [](const std::string& v) {
            return v.empty() || v.find_first_of(" {}:") != std::string::npos
                       ? std::string("must be a name without spaces, ':' or braces")
                       : std::string();
          }),
      StringKey(
          "cluster", "node", [](Config & c) -> auto& { return c.cluster.node; },
          [](const std::string& v) {
            return v.find_first_of(" {}:") != std::string::npos
                       ? std::string("must be a name without spaces, ':' or braces")
                       : std::string();
          }),
      IntKey<uint32_t>(
          "cluster", "shards", [](Config & c) -> auto& { return c.cluster.shards; }, 1,
          65536),
      IntKey<uint32_t>(
          "cluster", "min_nodes", [](Config & c) -> auto& { return c.cluster.min_nodes; },
          1, 1000),
      IntKey<uint32_t>(
          "cluster", "batch_urls",
          [](Config & c) -> auto& { return c.cluster.batch_urls; }, 1, 100000),
      IntKey<uint32_t>(
          "cluster", "batch_ms", [](Config & c) -> auto& { return c.cluster.batch_ms; },
          1, 60000),
      DoubleKey(
          "cluster", "heartbeat_s",
          [](Config & c) -> auto& { return c.cluster.heartbeat_s; }, 0.1, 3600),
      DoubleKey(
          "cluster", "lease_s", [](Config & c) -> auto& { return c.cluster.lease_s; },
          0.3, 36000),
      IntKey<uint32_t>(
          "cluster", "max_lag_batches",
          [](Config & c) -> auto& { return c.cluster.max_lag_batches; }, 1, 10000000),
      IntKey<uint64_t>(
          "cluster", "outbox_ram_urls",
          [](Config & c) -> auto& { return c.cluster.outbox_ram_urls; }, 0, kMax64),
      StringKey(
          "cluster", "shared_dir",
          [](Config & c) -> auto& { return c.cluster.shared_dir; },
          [](const std::string&) { return std::string(); }),
      BoolKey(
          "cluster", "balance", [](Config & c) -> auto& { return c.cluster.balance; }),
      BoolKey(
          "cluster", "place_by_seeds",
          [](Config & c) -> auto& { return c.cluster.place_by_seeds; }),
      BoolKey(
          "cluster", "ip_politeness",
          [](Config & c) -> auto& { return c.cluster.ip_politeness; }),
      DoubleKey(
          "cluster", "turn_timeout_s",
          [](Config & c) -> auto& { return c.cluster.turn_timeout_s; }, 0.01, 3600),
  };
  for (Key& k : SentinelKeys()) keys.push_back(std::move(k));
  return keys;
}

std::vector<Key> RecrawlKeys() {
  constexpr double kYear = 365 * 86400.0;
  return {
      BoolKey(
          "recrawl", "enabled", [](Config & c) -> auto& { return c.recrawl.enabled; }),
      DoubleKey(
          "recrawl", "interval_s",
          [](Config & c) -> auto& { return c.recrawl.interval_s; }, 0, kYear, true),
      DoubleKey(
          "recrawl", "min_interval_s",
          [](Config & c) -> auto& { return c.recrawl.min_interval_s; }, 0, kYear, true),
      DoubleKey(
          "recrawl", "max_interval_s",
          [](Config & c) -> auto& { return c.recrawl.max_interval_s; }, 0, kYear, true),
      StringKey(
          "recrawl", "adapt", [](Config & c) -> auto& { return c.recrawl.adapt; },
          [](const std::string& v) {
            return v == "fixed" || v == "adaptive" || v == "change-rate"
                       ? std::string()
                       : std::string(
                             "must be \"fixed\", \"adaptive\" or \"change-rate\"");
          }),
      DoubleKey(
          "recrawl", "age_weight",
          [](Config & c) -> auto& { return c.recrawl.age_weight; }, 0, 1000),
      DoubleKey(
          "recrawl", "inc_rate", [](Config & c) -> auto& { return c.recrawl.inc_rate; },
          0, 10),
      DoubleKey(
          "recrawl", "dec_rate", [](Config & c) -> auto& { return c.recrawl.dec_rate; },
          0, 0.99),
      BoolKey(
          "recrawl", "conditional",
          [](Config & c) -> auto& { return c.recrawl.conditional; }),
      IntKey<uint32_t>(
          "recrawl", "forget_gone_after",
          [](Config & c) -> auto& { return c.recrawl.forget_gone_after; }, 0, 1000),
  };
}

std::vector<Key> BrowserKeys() {
  return {
      StringKey(
          "browser", "render", [](Config & c) -> auto& { return c.browser.render; },
          [](const std::string& v) {
            return v == "off" || v == "auto" || v == "always"
                       ? std::string()
                       : std::string("must be \"off\", \"auto\" or \"always\"");
          }),
      StringListKey(
          "browser", "include", [](Config & c) -> auto& { return c.browser.include; },
          true),
      StringListKey(
          "browser", "exclude", [](Config & c) -> auto& { return c.browser.exclude; },
          true),
      IntKey<uint32_t>(
          "browser", "processes", [](Config & c) -> auto& { return c.browser.processes; },
          1, 64),
      IntKey<uint32_t>(
          "browser", "restart_pages",
          [](Config & c) -> auto& { return c.browser.restart_pages; }, 1, 1000000),
      DoubleKey(
          "browser", "page_timeout_s",
          [](Config & c) -> auto& { return c.browser.page_timeout_s; }, 1, 3600),
      IntKey<uint32_t>(
          "browser", "idle_ms", [](Config & c) -> auto& { return c.browser.idle_ms; }, 0,
          600000),
      IntKey<uint32_t>(
          "browser", "scroll_steps",
          [](Config & c) -> auto& { return c.browser.scroll_steps; }, 0, 10000),
      StringKey(
          "browser", "chromium", [](Config & c) -> auto& { return c.browser.chromium; },
          [](const std::string& v) {
            return v.empty() ? std::string("must name the browser") : std::string();
          }),
  };
}

}  // namespace crawler::engine::config_key
