// frontier_bench: the frontier's memory bound. Admits N URLs (default
// 1,000,000, over 1,000 hosts, ~70 bytes each) through a bloom filter into a
// frontier holding at most --max-memory URLs in RAM (default 100,000), then
// drains it. Prints peak RSS, the filter's own bytes, what spilled, and the
// admit / drain rates. Asserts nothing; the target is peak RSS < 300 MB plus
// the filter.
//
//   build/tests/frontier_bench [--urls N] [--hosts H] [--max-memory M] [--dir DIR]
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "dedup/filter.h"
#include "frontier/frontier.h"

namespace {

double PeakRssMb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t urls = 1'000'000, hosts = 1000, max_memory = 100'000;
  std::string dir = (std::filesystem::temp_directory_path() / "frontier_bench").string();
  CLI::App app{"frontier_bench: frontier memory and speed"};
  app.add_option("--urls", urls, "URLs to queue")->capture_default_str();
  app.add_option("--hosts", hosts, "hosts they spread over")->capture_default_str();
  app.add_option("--max-memory", max_memory, "frontier.max_memory_urls")
      ->capture_default_str();
  app.add_option("--dir", dir, "spill directory")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::filesystem::remove_all(dir);
  double rss_start = PeakRssMb();
  crawler::dedup::FilterOptions fo;
  fo.capacity = urls;
  fo.error_rate = 0.01;
  auto filter = crawler::dedup::Filter::Create(fo);
  crawler::frontier::FrontierOptions o;
  o.max_memory_urls = max_memory;
  o.spill_dir = dir;
  o.min_delay_s = 0;
  auto frontier = crawler::frontier::Frontier::Create(o);
  if (!filter.ok() || !frontier.ok()) {
    std::fprintf(stderr, "frontier_bench: setup failed\n");
    return 1;
  }
  auto t0 = std::chrono::steady_clock::now();
  const uint64_t batch = 64;  // about one page's links
  std::vector<crawler::frontier::UrlEntry> entries;
  for (uint64_t i = 0; i < urls; i += batch) {
    entries.clear();
    for (uint64_t j = i; j < std::min(urls, i + batch); ++j) {
      uint64_t h = (j * 2654435761u) % hosts;
      entries.push_back({"https://host-" + std::to_string(h) +
                             ".example.org/section/page-" + std::to_string(j) + ".html",
                         static_cast<uint32_t>(j % 7),
                         "https://host-" + std::to_string(h) + ".example.org/"});
    }
    auto r = (*frontier)->Admit(std::move(entries), **filter);
    if (!r.ok()) {
      std::fprintf(stderr, "frontier_bench: %s\n", r.status().message().c_str());
      return 1;
    }
    for (const std::string& host : r->new_hosts)
      (*frontier)->OpenHost(host, std::nullopt);
  }
  double admit_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto stats = (*frontier)->Stats(std::chrono::steady_clock::now());
  double rss_admitted = PeakRssMb();
  auto fs = (*filter)->Stats();
  t0 = std::chrono::steady_clock::now();
  uint64_t popped = 0;
  while (true) {
    auto now = std::chrono::steady_clock::now();
    auto lease = (*frontier)->Pop(now);
    if (!lease.ok()) {
      std::fprintf(stderr, "frontier_bench: %s\n", lease.status().message().c_str());
      return 1;
    }
    if (!lease.value()) break;
    (*frontier)->Done(**lease, now, 0);
    ++popped;
  }
  double drain_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("frontier_bench: %" PRIu64 " URLs over %" PRIu64
              " hosts, max_memory_urls %" PRIu64 "\n",
              urls, hosts, max_memory);
  std::printf("  after admitting: %" PRIu64 " queued in RAM, %" PRIu64
              " on disk (%" PRIu64 " ever spilled)\n",
              stats.queued_memory, stats.queued_disk, stats.spilled);
  std::printf("  admit %.0f URLs/s, drain %.0f URLs/s (%" PRIu64 " popped)\n",
              static_cast<double>(urls) / admit_s, static_cast<double>(popped) / drain_s,
              popped);
  std::printf(
      "  dedup filter: %.1f MB; peak RSS %.1f MB after admitting, %.1f MB at the end "
      "(%.1f MB at start)\n",
      static_cast<double>(fs.bytes) / 1e6, rss_admitted, PeakRssMb(), rss_start);
  std::printf(
      "  target: peak RSS < 300 MB + filter = %.1f MB: %s\n",
      300 + static_cast<double>(fs.bytes) / 1e6,
      PeakRssMb() < 300 + static_cast<double>(fs.bytes) / 1e6 ? "met" : "NOT met");
  std::filesystem::remove_all(dir);
  return 0;
}
