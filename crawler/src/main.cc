// crawler: the command line.
//
//   crawler crawl --seeds FILE [--config FILE] [--out DIR] [--set section.key=value ...]
//   crawler normalize [--base URL] [URL ...]
//
// Exit codes: 0 done, 1 crawl error (output I/O), 2 bad usage or bad input
// (seeds, config, --set).
#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "crawler/config.h"
#include "crawler/crawl.h"
#include "crawler/seeds.h"
#include "parsers/url.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitCrawlError = 1;
constexpr int kExitBadInput = 2;

std::atomic<bool> g_stop{false};

extern "C" void OnSignal(int) { g_stop = true; }

int RunCrawl(const std::string& seeds_path, const std::string& config_path,
             const std::string& out, const std::vector<std::string>& sets) {
  auto config = crawler::engine::LoadConfig(config_path, sets);
  if (!config.ok()) {
    std::fprintf(stderr, "crawler: %s\n", config.status().message().c_str());
    return kExitBadInput;
  }
  auto seeds = crawler::engine::ReadSeeds(seeds_path, config->url);
  if (!seeds.ok()) {
    std::fprintf(stderr, "crawler: %s\n", seeds.status().message().c_str());
    return kExitBadInput;
  }
  for (const std::string& p : seeds->problems) std::fprintf(stderr, "crawler: skipped seed: %s\n", p.c_str());
  auto crawl = crawler::engine::Crawl::Create(*config, seeds->urls, out);
  if (!crawl.ok()) {
    std::fprintf(stderr, "crawler: %s\n", crawl.status().message().c_str());
    return kExitCrawlError;
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  auto summary = (*crawl)->Run(g_stop);
  if (!summary.ok()) {
    std::fprintf(stderr, "crawler: %s\n", summary.status().message().c_str());
    return kExitCrawlError;
  }
  const auto& s = *summary;
  std::printf(
      "crawl %s in %.1f s: %llu fetched (2xx %llu, 3xx %llu, 4xx %llu, 5xx %llu), %llu failed, "
      "%llu truncated, %.1f MB\n"
      "  skipped: %llu robots, %llu out of scope, %llu too deep, %llu trap guard; "
      "%llu duplicate links\n"
      "  WARC: %s/\n  fetch log: %s\n",
      s.stopped ? "stopped" : "done", s.seconds, static_cast<unsigned long long>(s.fetched),
      static_cast<unsigned long long>(s.status_2xx), static_cast<unsigned long long>(s.status_3xx),
      static_cast<unsigned long long>(s.status_4xx), static_cast<unsigned long long>(s.status_5xx),
      static_cast<unsigned long long>(s.failed), static_cast<unsigned long long>(s.truncated),
      static_cast<double>(s.bytes) / 1e6, static_cast<unsigned long long>(s.robots_blocked),
      static_cast<unsigned long long>(s.out_of_scope), static_cast<unsigned long long>(s.too_deep),
      static_cast<unsigned long long>(s.trap_guard), static_cast<unsigned long long>(s.duplicates),
      s.warc_dir.c_str(), s.fetch_log.c_str());
  return kExitOk;
}

int RunNormalize(const std::string& base, const std::vector<std::string>& urls) {
  int failed = 0;
  auto one = [&](const std::string& u) {
    auto r = base.empty() ? crawler::parsers::NormalizeUrl(u) : crawler::parsers::ResolveHref(base, u);
    if (r.ok()) {
      std::printf("%s\n", r.url.c_str());
    } else {
      std::printf("error: %s\n", r.error.c_str());
      failed = 1;
    }
  };
  if (urls.empty()) {
    std::string line;
    while (std::getline(std::cin, line)) one(line);
  } else {
    for (const auto& u : urls) one(u);
  }
  return failed;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"crawler: a polite web crawler with a compact URL-seen filter.\n"
               "Exit codes: 0 done, 1 crawl error, 2 bad usage or bad input."};
  app.require_subcommand(1);
  std::string seeds, config, out = "crawl-out", base;
  std::vector<std::string> sets, urls;
  CLI::App* crawl = app.add_subcommand("crawl", "crawl from a seed list");
  crawl->add_option("--seeds", seeds, "seed URLs, one per line")->required();
  crawl->add_option("--config", config, "TOML config (default: built-in defaults)");
  crawl->add_option("--out", out, "output directory")->capture_default_str();
  crawl->add_option("--set", sets, "override a config key: section.key=value");
  CLI::App* normalize = app.add_subcommand("normalize", "print the dedup key of each URL");
  normalize->add_option("--base", base, "resolve inputs against this URL");
  normalize->add_option("urls", urls, "URLs (default: stdin, one per line)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitBadInput;
  }
  if (*crawl) return RunCrawl(seeds, config, out, sets);
  return RunNormalize(base, urls);
}
