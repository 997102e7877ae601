// The URL exchange of a cluster crawl, measured through a real Redis
// (scripts/bench-cluster.sh starts one with appendfsync always). Two nodes in
// one process, each a real Cluster (crawler/src/cluster.h): node a ships
// URLs whose hosts node b owns. Prints numbers; asserts nothing.
//
//   1. memory: a sends N URLs while b is not reading yet; Redis's used_memory
//      grows by X: X / N bytes per in-flight URL.
//   2. throughput: b starts and drains them; a sends N more at full speed
//      while b reads: URLs/s end to end.
//   3. latency: a ships at --rate URLs/s for --seconds; each URL carries its
//      discovery time; b's admission time minus it gives p50 / p99.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/redis/redis.h"

using crawler::cluster::Cluster;
using crawler::engine::Config;
using Clock = std::chrono::steady_clock;

namespace {

uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   Clock::now().time_since_epoch())
                                   .count());
}

uint64_t UsedMemory(crawler::cluster::Redis& r) {
  auto info = r.Command({"INFO", "memory"});
  std::string s = info.ok() ? info->Str() : "";
  size_t at = s.find("used_memory:");
  return at == std::string::npos ? 0 : std::strtoull(s.c_str() + at + 12, nullptr, 10);
}

// URLs like a crawl's links (~70 bytes), all on hosts node b owns.
// A random 12-hex-digit path segment in each keeps zlib honest (a list of
// near-identical synthetic URLs compresses far better than real links).
std::vector<std::string> MakeUrls(const Cluster& a, size_t n, uint64_t salt) {
  std::vector<std::string> out;
  std::mt19937_64 rng(salt);
  char token[16];
  for (uint64_t i = 0; out.size() < n; ++i) {
    std::snprintf(token, sizeof(token), "%012" PRIx64,
                  static_cast<uint64_t>(rng() & 0xffffffffffffULL));
    std::string url = "http://www.host" + std::to_string(i % 20011) +
                      ".example.org/articles/" + token + "/page-" +
                      std::to_string(i * 7919 % 100000) + ".html";
    if (!a.Owns(url)) out.push_back(std::move(url));
  }
  return out;
}

// Drains b until `want` URLs arrived; returns the latencies (ns) of those
// whose referrer is a timestamp.
size_t Drain(Cluster& b, size_t want, double timeout_s, std::vector<uint64_t>* latency) {
  size_t got = 0;
  auto until = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (got < want && Clock::now() < until) {
    std::vector<crawler::frontier::UrlEntry> in = b.TakeInbox();
    uint64_t now = NowNs();
    b.Admitted();
    got += in.size();
    if (latency != nullptr) {
      for (const auto& e : in) {
        uint64_t t = std::strtoull(e.referrer.c_str(), nullptr, 10);
        if (t > 0 && now > t) latency->push_back(now - t);
      }
    }
    if (in.empty()) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return got;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cluster exchange benchmark (see scripts/bench-cluster.sh)"};
  std::string redis = "redis://127.0.0.1:6390";
  size_t urls = 1000000;
  uint32_t batch_urls = 256, batch_ms = 20;
  double rate = 50000, seconds = 5;
  uint32_t wait_replicas = 0;
  app.add_option("--redis", redis, "redis://HOST:PORT");
  app.add_option("--wait-replicas", wait_replicas,
                 "cluster.wait_replicas (the server needs that many replicas)");
  app.add_option("--urls", urls, "URLs for the memory and throughput phases");
  app.add_option("--batch-urls", batch_urls, "cluster.batch_urls");
  app.add_option("--batch-ms", batch_ms, "cluster.batch_ms");
  app.add_option("--rate", rate, "URLs/s in the latency phase");
  app.add_option("--seconds", seconds, "length of the latency phase");
  CLI11_PARSE(app, argc, argv);

  Config ca;
  ca.cluster.redis = redis;
  ca.cluster.job = "bench-" + std::to_string(::getpid());
  ca.cluster.min_nodes = 2;
  ca.cluster.batch_urls = batch_urls;
  ca.cluster.batch_ms = batch_ms;
  ca.cluster.wait_replicas = wait_replicas;
  Config cb = ca;
  ca.cluster.node = "a";
  cb.cluster.node = "b";
  // Out dirs: the job's identity, and spill files (none at these lags).
  const std::string dir = "/tmp/cluster-bench-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir + "/a");
  std::filesystem::create_directories(dir + "/b");
  auto a = Cluster::Join(ca, dir + "/a", false);
  auto b = Cluster::Join(cb, dir + "/b", false);
  if (!a.ok() || !b.ok()) {
    std::fprintf(stderr, "join: %s\n",
                 (!a.ok() ? a.status() : b.status()).message().c_str());
    return 2;
  }
  auto address = crawler::cluster::ParseRedisUrl(redis);
  if (!address.ok()) return 2;
  auto probe = crawler::cluster::Redis::Connect(*address, 5);
  if (!probe.ok()) return 2;
  std::atomic<bool> stop{false};
  auto never_idle = [] { return false; };
  if (!(*a)->Start(stop, never_idle).ok()) return 2;
  std::printf(
      "cluster exchange bench: redis %s, batch_urls %u, batch_ms %u, wait_replicas %u, "
      "%zu URLs\n",
      redis.c_str(), batch_urls, batch_ms, wait_replicas, urls);

  // 1. Memory per in-flight URL (b not reading yet).
  std::vector<std::string> list = MakeUrls(**a, urls, 1);
  uint64_t bytes_of_urls = 0;
  for (const auto& u : list) bytes_of_urls += u.size();
  uint64_t mem0 = UsedMemory(**probe);
  auto t0 = Clock::now();
  for (size_t i = 0; i < list.size(); i += 1000) {
    std::vector<crawler::frontier::UrlEntry> chunk;
    for (size_t j = i; j < std::min(list.size(), i + 1000); ++j)
      chunk.push_back({list[j], 3, "", 0});
    (*a)->Ship(std::move(chunk));
  }
  while ((*a)->figures().urls_sent < list.size())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  double send_s = std::chrono::duration<double>(Clock::now() - t0).count();
  uint64_t mem1 = UsedMemory(**probe);
  std::printf("send (owner not reading): %.0f URLs/s (%.2f s for %zu)\n",
              static_cast<double>(list.size()) / send_s, send_s, list.size());
  std::printf(
      "redis memory per in-flight URL: %.1f bytes (used_memory +%.1f MB; the "
      "URLs themselves average %.1f bytes)\n",
      static_cast<double>(mem1 - mem0) / static_cast<double>(list.size()),
      static_cast<double>(mem1 - mem0) / 1e6,
      static_cast<double>(bytes_of_urls) / static_cast<double>(list.size()));

  // 2. Throughput: b drains the backlog, then both run at once.
  if (!(*b)->Start(stop, never_idle).ok()) return 2;
  t0 = Clock::now();
  size_t got = Drain(**b, list.size(), 300, nullptr);
  double drain_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("receive (backlog): %.0f URLs/s (%zu in %.2f s)\n",
              static_cast<double>(got) / drain_s, got, drain_s);
  std::vector<std::string> more = MakeUrls(**a, urls, 2);
  t0 = Clock::now();
  std::thread shipper([&] {
    for (size_t i = 0; i < more.size(); i += 1000) {
      std::vector<crawler::frontier::UrlEntry> chunk;
      for (size_t j = i; j < std::min(more.size(), i + 1000); ++j)
        chunk.push_back({more[j], 3, "", 0});
      (*a)->Ship(std::move(chunk));
    }
  });
  got = Drain(**b, more.size(), 300, nullptr);
  shipper.join();
  double both_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf(
      "exchange end to end (send + receive at once): %.0f URLs/s (%zu in %.2f s)\n",
      static_cast<double>(got) / both_s, got, both_s);

  // 3. Latency at a steady rate.
  std::vector<std::string> paced = MakeUrls(**a, static_cast<size_t>(rate * seconds), 3);
  std::vector<uint64_t> latency;
  std::thread pacer([&] {
    auto start = Clock::now();
    size_t sent = 0;
    while (sent < paced.size()) {
      double due = std::chrono::duration<double>(Clock::now() - start).count() * rate;
      std::vector<crawler::frontier::UrlEntry> chunk;
      while (sent < paced.size() && static_cast<double>(sent) < due)
        chunk.push_back({paced[sent++], 3, std::to_string(NowNs()), 0});
      if (!chunk.empty()) (*a)->Ship(std::move(chunk));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  got = Drain(**b, paced.size(), seconds + 60, &latency);
  pacer.join();
  std::sort(latency.begin(), latency.end());
  auto pct = [&](double p) {
    return latency.empty()
               ? 0.0
               : static_cast<double>(latency[std::min(
                     latency.size() - 1,
                     static_cast<size_t>(p * static_cast<double>(latency.size())))]) /
                     1e6;
  };
  std::printf(
      "latency discovery -> owner's inbox at %.0f URLs/s: p50 %.1f ms, p99 %.1f ms, "
      "max %.1f ms (%zu URLs)\n",
      rate, pct(0.5), pct(0.99), pct(1.0), got);
  stop = true;
  a->reset();  // their last rounds before the keys go
  b->reset();
  (void)(*probe)->Command({"EVAL",
                           "for _, k in ipairs(redis.call('keys', ARGV[1])) do "
                           "redis.call('del', k) end return 1",
                           "0", "crawler:{" + ca.cluster.job + "}:*"});
  std::filesystem::remove_all(dir);
  return 0;
}
