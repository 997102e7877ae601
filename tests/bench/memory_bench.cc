// memory_bench: what `crawler stats` shows under "memory" set against the
// allocator. Each part counts its bytes from its own structures
// (base/heap_bytes.h); this fills each one (a frontier of H hosts with K
// URLs each, on H/20 addresses; a host table of H hosts with robots.txt
// rules and domain budgets; B response bodies) and prints, per part, the
// bytes it counts and how much jemalloc's `stats.allocated` grew meanwhile
// (this program links jemalloc, as the crawler does), and how long the
// frontier's walk held its lock. Asserts nothing.
//
//   build/tests/memory_bench [--hosts H] [--urls K] [--bodies B]
//   build/tests/memory_bench --addresses N   (the per-address records only)
#include <CLI/CLI.hpp>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "crawler/body.h"
#include "dedup/filter.h"
#include "engine/gate.h"
#include "engine/host_table.h"
#include "frontier/frontier.h"

extern "C" int mallctl(const char* name, void* oldp, size_t* oldlenp, void* newp,
                       size_t newlen);

namespace {

using crawler::engine::Body;

uint64_t Allocated() {
  uint64_t epoch = 1;
  size_t len = sizeof(epoch);
  mallctl("epoch", &epoch, &len, &epoch, len);
  size_t allocated = 0;
  len = sizeof(allocated);
  mallctl("stats.allocated", &allocated, &len, nullptr, 0);
  return allocated;
}

void Print(const char* part, uint64_t items, uint64_t counted, uint64_t grew) {
  std::printf("%-16s %10" PRIu64 " %14" PRIu64 " %14" PRIu64 " %7.3f %10.1f\n", part,
              items, counted, grew,
              grew > 0 ? static_cast<double>(counted) / static_cast<double>(grew) : 0.0,
              items > 0 ? static_cast<double>(grew) / static_cast<double>(items) : 0.0);
}

std::string HostName(uint64_t i) {
  return "https://host" + std::to_string(i) + ".example";
}

// A frontier of `hosts` hosts with `urls` URLs each (no spill), on
// hosts / 20 addresses.
int FrontierPart(uint64_t hosts, uint64_t urls, const std::string& dir) {
  crawler::dedup::FilterOptions fo;
  fo.capacity = hosts * urls * 2;
  auto filter = crawler::dedup::Filter::Create(fo);
  crawler::frontier::FrontierOptions o;
  o.max_memory_urls = hosts * urls * 2;
  o.spill_dir = dir;
  auto frontier = crawler::frontier::Frontier::Create(o);
  if (!filter.ok() || !frontier.ok()) return 1;
  const uint64_t before = Allocated();
  for (uint64_t h = 0; h < hosts; ++h) {
    std::vector<crawler::frontier::UrlEntry> batch;
    for (uint64_t u = 0; u < urls; ++u) {
      crawler::frontier::UrlEntry e;
      e.url = HostName(h) + "/articles/2026/" + std::to_string(u) +
              "/a-page-title-of-some-words";
      e.referrer = HostName(h) + "/";
      e.depth = 1;
      batch.push_back(std::move(e));
    }
    if (!(*frontier)->Admit(std::move(batch), **filter).ok()) return 1;
    (*frontier)->SetAddress(HostName(h), "127.1." + std::to_string(h / 20 / 256) + "." +
                                             std::to_string(h / 20 % 256));
  }
  const uint64_t grew = Allocated() - before;
  const auto t0 = std::chrono::steady_clock::now();
  const crawler::frontier::FrontierMemory m = (*frontier)->Memory();
  const double walk_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
          .count();
  Print("frontier", hosts * urls, m.urls + m.hosts, grew);
  std::printf("  of which: URLs %" PRIu64 " (%.1f B each), hosts %" PRIu64
              " (%.1f B each)\n",
              m.urls, static_cast<double>(m.urls) / static_cast<double>(hosts * urls),
              m.hosts, static_cast<double>(m.hosts) / static_cast<double>(hosts));
  // What a stats refresh holds the frontier's lock for.
  std::printf("  Frontier::Memory walked them in %.2f ms\n", walk_ms);
  return 0;
}

// The frontier's per-address records: `n` hosts, each on an address of its
// own, each address asked once (a request started and ended), then every
// host moved to a new address (as when DNS answers change): the first
// addresses have no host left, so their records are dropped as the new ones
// come. Prints the records kept and their bytes per address still referred
// to, counted and as jemalloc saw them grow.
int AddressesPart(uint64_t n, const std::string& dir) {
  crawler::dedup::FilterOptions fo;
  fo.capacity = n * 2;
  auto filter = crawler::dedup::Filter::Create(fo);
  crawler::frontier::FrontierOptions o;
  o.max_memory_urls = n * 2;
  o.min_delay_ip_s = 0;  // an address is idle once its request ended
  o.spill_dir = dir;
  auto frontier = crawler::frontier::Frontier::Create(o);
  if (!filter.ok() || !frontier.ok()) return 1;
  auto address = [](uint64_t round, uint64_t i) {
    return std::to_string(10 + round) + "." + std::to_string(i >> 16 & 255) + "." +
           std::to_string(i >> 8 & 255) + "." + std::to_string(i & 255);
  };
  std::vector<crawler::frontier::UrlEntry> batch;
  for (uint64_t h = 0; h < n; ++h) {
    crawler::frontier::UrlEntry e;
    e.url = HostName(h) + "/";
    batch.push_back(std::move(e));
  }
  if (!(*frontier)->Admit(std::move(batch), **filter).ok()) return 1;
  const uint64_t before = Allocated();
  for (uint64_t round = 0; round < 2; ++round) {
    for (uint64_t h = 0; h < n; ++h) {
      const std::string a = address(round, h);
      (*frontier)->SetAddress(HostName(h), a);
      const auto now = crawler::frontier::Clock::now();
      if (!(*frontier)->TryStartAt(a, now)) return 1;
      (*frontier)->EndAt(a, now);
    }
    const uint64_t grew = Allocated() - before;
    const uint64_t kept = (*frontier)->Stats(crawler::frontier::Clock::now()).addresses;
    const uint64_t counted = (*frontier)->Memory().addresses;
    std::printf("addresses, round %" PRIu64 ": %" PRIu64 " seen, %" PRIu64
                " records kept for %" PRIu64 " referred to\n",
                round + 1, n * (round + 1), kept, n);
    Print("  per address", n, counted, grew);
  }
  return 0;
}

// A host table of `hosts` hosts, each with a robots.txt of three rules and
// a sitemap, four hosts to a registered domain, budgets on.
void HostTablePart(uint64_t hosts) {
  using crawler::engine::HostTable;
  crawler::engine::Gate gate;
  crawler::engine::GateUnit unit(gate);
  const uint64_t before = Allocated();
  HostTable t("crawler", 0, 86400, crawler::engine::DomainBudgetOptions{});
  const auto now = crawler::frontier::Clock::now();
  const std::string robots =
      "User-agent: *\nDisallow: /private/\nDisallow: /cgi-bin/\nAllow: /private/open\n"
      "Sitemap: https://example/sitemap.xml\n";
  for (uint64_t h = 0; h < hosts; ++h) {
    const std::string host = HostName(h);
    t.RobotsStarted(unit.pass(), host, host + "/robots.txt", 0);
    t.RobotsDone(unit.pass(), host, crawler::parsers::RobotsFetch::kOk, robots, now);
    crawler::frontier::UrlEntry e;
    e.url = host + "/";
    t.ReserveUrls(unit.pass(), {e}, {"domain" + std::to_string(h / 4) + ".example"},
                  {""});
  }
  const uint64_t grew = Allocated() - before;
  Print("host table", hosts, t.Summarize(0).memory_bytes, grew);
}

// `n` bodies of 20 chunks of 4 KiB each, as the fetcher appends them.
void BodiesPart(uint64_t n) {
  const uint64_t before = Allocated();
  const uint64_t counted_before = Body::RamBytes();
  std::vector<Body> bodies(n);
  const std::string chunk(4096, 'x');
  for (Body& b : bodies) {
    for (int i = 0; i < 20; ++i) b.Append(chunk.data(), chunk.size());
  }
  const uint64_t grew = Allocated() - before;
  Print("bodies", n, Body::RamBytes() - counted_before, grew);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t hosts = 100'000, urls = 4, bodies = 1000, addresses = 0;
  CLI::App app{"memory_bench: each part's counted bytes against the allocator's"};
  app.add_option("--hosts", hosts, "hosts in the frontier and the host table");
  app.add_option("--urls", urls, "URLs queued per host");
  app.add_option("--bodies", bodies, "response bodies of 80 KiB");
  app.add_option("--addresses", addresses,
                 "only the per-address records: N addresses seen, then N more");
  CLI11_PARSE(app, argc, argv);
  const std::string dir =
      (std::filesystem::temp_directory_path() / "memory_bench").string();
  std::filesystem::create_directories(dir);
  std::printf("%-16s %10s %14s %14s %7s %10s\n", "part", "items", "counted_bytes",
              "allocator_grew", "ratio", "B_per_item");
  if (addresses > 0) {
    const int code = AddressesPart(addresses, dir);
    std::filesystem::remove_all(dir);
    return code;
  }
  if (FrontierPart(hosts, urls, dir) != 0) {
    std::fprintf(stderr, "memory_bench: the frontier could not be built\n");
    return 1;
  }
  HostTablePart(hosts);
  BodiesPart(bodies);
  std::filesystem::remove_all(dir);
  return 0;
}
