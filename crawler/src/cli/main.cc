// crawler: the command line (room cli/, the top of crawler/src: its wording
// and exit codes; docs/architecture.md).
//
//   crawler crawl --seeds FILE [--config FILE] [--out DIR] [--set section.key=value ...]
//   crawler crawl --resume DIR [--set limit=value ...]
//   crawler stats DIR [--json] [--html FILE]
//   crawler cluster-stats redis://HOST:PORT [--job J] [--json] [--html FILE]
//   crawler normalize [--base URL] [--sort-query] [--strip-tracking]
//                     [--strip-session-ids] [--strip-www] [URL ...]
//
//   crawler --version
//
// Exit codes: 0 done (also after Ctrl-C/SIGTERM: a checkpoint is written; a
// cluster node with cluster.shared_dir leaves the job on SIGTERM),
// 1 crawl error (an output or checkpoint that cannot be written or read: disk
// full, I/O error), 2 bad usage or bad input (seeds, config, --set, a damaged
// or missing checkpoint). SIGUSR1 asks for a checkpoint now. The wording of
// every message and the exit codes live here, not in the library; each error
// is printed once (stderr), and also goes to OUT/crawler.log.
#include <fmt/core.h>
#include <malloc.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>

#include "crawler/config.h"
#include "crawler/crawl.h"
#include "crawler/seeds.h"
#include "crawler/stats_report.h"
#include "crawler/version.h"
#include "crawler/wacz.h"
#include "crawler/warc.h"
#include "parsers/url.h"
#if CRAWLER_WITH_CLUSTER
#include "cluster/entry.h"  // the one header of cluster/ included outside it
#endif

namespace {

constexpr int kExitOk = 0;
constexpr int kExitCrawlError = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitLosses = 3;  // a crawl that ended with losses (CrawlCounts::lost)

std::atomic<bool> g_stop{false};
std::atomic<bool> g_stop_now{false};  // a second signal: no grace
std::atomic<bool> g_checkpoint{false};

std::atomic<bool> g_leave{false};

extern "C" void OnSignal(int) {
  if (g_stop.load()) g_stop_now = true;
  g_stop = true;
}
// SIGTERM: also a cluster node's graceful leave (its leases are given up).
extern "C" void OnTerm(int) {
  g_leave = true;
  if (g_stop.load()) g_stop_now = true;
  g_stop = true;
}
extern "C" void OnCheckpointSignal(int) { g_checkpoint = true; }

// I/O failures are crawl errors; everything else is bad input.
int ExitCodeFor(const crawler::Status& st) {
  return st.code() == crawler::Status::Code::kIoError ? kExitCrawlError : kExitBadInput;
}

// One message on stderr (and in the log file, if one is set up).
int Fail(const crawler::Status& st, bool logged) {
  if (!logged) spdlog::error("{}", st.message());
  std::fprintf(stderr, "crawler: %s\n", st.message().c_str());
  return ExitCodeFor(st);
}

// OUT/crawler.log gets everything the engine logs; nothing goes to stderr
// through the logger (main prints what the user must see, once).
void SetUpLog(const std::string& out) {
  try {
    std::filesystem::create_directories(out);
    auto logger = spdlog::basic_logger_mt("crawler", out + "/crawler.log");
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %l [%t] %v");
    logger->flush_on(spdlog::level::warn);
    spdlog::set_default_logger(logger);
    spdlog::flush_every(std::chrono::seconds(2));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "crawler: %s/crawler.log: %s (no log file for this run)\n",
                 out.c_str(), e.what());
  }
}

// The live status line (on a TTY) and a progress line in the log every 10 s.
class Progress {
 public:
  Progress()
      : tty_(::isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()) {}

  void operator()(const crawler::engine::CrawlProgress& p) {
    auto now = std::chrono::steady_clock::now();
    double elapsed = std::chrono::duration<double>(now - start_).count();
    uint64_t pages = p.summary.fetched + p.summary.failed;
    double rate = static_cast<double>(pages - last_pages_) /
                  std::max(1e-3, std::chrono::duration<double>(now - last_).count());
    last_pages_ = pages;
    last_ = now;
    uint64_t errors = p.summary.failed + p.summary.status_5xx;
    std::string text = fmt::format(
        "{:6.0f}s {:7.1f} pages/s | fetched {} | queued {} RAM + {} disk | hosts {} | "
        "dedup {}, FPR {:.4f}% | errors {}",
        elapsed, rate, pages, p.frontier.queued_memory, p.frontier.queued_disk,
        p.frontier.hosts, p.dedup_items, p.dedup_fpr * 100, errors);
    if (!p.cluster.empty()) text += " | " + p.cluster;
    if (tty_) std::fprintf(stderr, "\r%s\x1b[K", text.c_str());
    // Every 10 s in the log; every second while Redis is down.
    if (++ticks_ % 10 == 0 || p.cluster.find("redis: down") != std::string::npos)
      spdlog::info("{}", text);
  }
  ~Progress() {
    if (tty_) std::fprintf(stderr, "\n");
  }

 private:
  bool tty_;
  std::chrono::steady_clock::time_point start_, last_ = std::chrono::steady_clock::now();
  uint64_t last_pages_ = 0;
  int ticks_ = 0;
};

std::string Kinds(const std::map<std::string, uint64_t>& counts) {
  return crawler::engine::KindsText(counts, [](uint64_t n) { return std::to_string(n); });
}
using crawler::engine::KindsTotal;

// The crawl's last words on stdout (and in crawler.log).
void PrintSummary(const crawler::engine::CrawlSummary& s, const std::string& dir) {
  const char* how = s.stopped ? "stopped" : s.lost.empty() ? "done" : "done, with losses";
  spdlog::info(
      "crawl {} in {:.1f} s: {} fetched, {} failed, {} URLs given up, {} pages "
      "unresolved, {} URLs lost",
      how, s.seconds, s.fetched, s.failed, s.gave_up, s.unresolved, KindsTotal(s.lost));
  fmt::print(
      "crawl {} in {:.1f} s: {} fetched (2xx {}, 3xx {}, 4xx {}, 5xx {}), {} failed, "
      "{} truncated, {:.1f} MB\n"
      "  skipped: {} robots, {} out of scope, {} too deep, {} trap guard, {} guards and "
      "budgets; "
      "{} duplicate links, {} refused by a full fixed-size filter\n"
      "  given up: {} URLs after their last retry, {} pages of hosts whose name did not "
      "resolve (the fetch log names each with its kind: {}); deferred: {} attempts in a "
      "DNS outage, {} moved to a host's next address\n"
      "  lost (no server answered): {} URLs ({}); {} hosts whose robots.txt had no "
      "answer ({})\n"
      "  frontier: spilled to disk: {} URLs\n"
      "  WARC: {}/\n  fetch log: {}\n  log: {}/crawler.log\n"
      "  checkpoint: {}/checkpoint/ (resume: crawler crawl --resume {}; report: crawler "
      "stats {})\n",
      how, s.seconds, s.fetched, s.status_2xx, s.status_3xx, s.status_4xx, s.status_5xx,
      s.failed, s.truncated, static_cast<double>(s.bytes) / 1e6, s.robots_blocked,
      s.out_of_scope, s.too_deep, s.trap_guard, KindsTotal(s.guarded), s.duplicates,
      s.filter_full, s.gave_up, s.unresolved, Kinds(s.errors), s.dns_deferred,
      s.other_address, KindsTotal(s.lost), Kinds(s.lost), KindsTotal(s.lost_hosts),
      Kinds(s.lost_hosts), s.spilled, s.warc_dir, s.fetch_log, dir, dir, dir, dir);
  std::fflush(stdout);
}

// How a crawl with [cluster] redis joins its job: the cluster target's; none
// in a build without it (cmake -DCRAWLER_CLUSTER=OFF), which then refuses
// such a config. A signal ends the join's waits (for Redis, for a previous
// process's liveness key): the node stops before it runs.
const crawler::crawl::NodeJoiner* Joiner() {
#if CRAWLER_WITH_CLUSTER
  static const crawler::crawl::NodeJoiner joiner =
      crawler::cluster::ClusterJoiner(&g_stop);
  return &joiner;
#else
  return nullptr;
#endif
}

int ClusterStats(const std::string& redis, const std::string& job, bool as_json,
                 const std::string& html) {
#if CRAWLER_WITH_CLUSTER
  return crawler::cluster::RunClusterStats(redis, job, as_json, html);
#else
  (void)redis, (void)job, (void)as_json, (void)html;
  std::fprintf(stderr, "crawler: this program was built without the cluster\n");
  return kExitBadInput;
#endif
}

// Cuts a cluster node's outputs back to its last committed checkpoint,
// which its successors loaded, so no page is in two nodes' outputs; says
// so (`then`: what the user may do next). Whether it could.
bool CutBack(const std::string& out, const std::string& then) {
  auto sequence = crawler::crawl::Crawl::CutBackToCommitted(out, Joiner());
  if (sequence.ok()) {
    spdlog::warn("cluster: outputs cut back to checkpoint {}, the last committed one",
                 *sequence);
    std::fprintf(stderr,
                 "crawler: %s: outputs cut back to checkpoint %llu, the last committed "
                 "one%s\n",
                 out.c_str(), static_cast<unsigned long long>(*sequence), then.c_str());
    return true;
  }
  spdlog::error("cluster: outputs not cut back: {}", sequence.status().message());
  std::fprintf(stderr, "crawler: %s: outputs not cut back: %s\n", out.c_str(),
               sequence.status().message().c_str());
  return false;
}

// A cluster node fenced out (another node took its shards while it was cut
// off): its outputs are cut back (CutBack). Then exit 1.
int EndFenced(std::unique_ptr<crawler::crawl::Crawl> crawl, const std::string& out) {
  crawl.reset();  // outputs closed, OUT/.lock released
  CutBack(out, "; `crawler crawl --resume " + out + "` rejoins the job");
  return kExitCrawlError;
}

// `crawler cut-back DIR`: a dead node's (killed, not restarted) outputs cut
// back to where the nodes that took its shards over began, before every
// node's outputs are packaged or indexed together. A running node's DIR is
// locked: refused.
int RunCutBack(const std::string& dir) {
  if (!crawler::crawl::Crawl::IsOutputDir(dir)) {
    std::fprintf(stderr, "crawler cut-back: %s: not a crawl output directory\n",
                 dir.c_str());
    return kExitBadInput;
  }
  return CutBack(dir, "") ? kExitOk : kExitBadInput;
}

int RunCrawl(const std::string& seeds_path, const std::string& config_path,
             const std::string& out, const std::vector<std::string>& sets,
             const std::string& resume) {
  using crawler::crawl::Crawl;
  crawler::Result<std::unique_ptr<Crawl>> crawl =
      crawler::Status::Error(crawler::Status::Code::kInvalidArgument, "");
  // Before the setup: a signal while a cluster node waits to join ends the
  // wait (exit 1, nothing done); one during the rest of the setup stops the
  // crawl as soon as it runs (a checkpoint, and on SIGTERM the leave). Set
  // later, a signal in a resumed node's join wait (up to a minute) ended it
  // as kill -9 would.
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnTerm);
  std::signal(SIGUSR1, OnCheckpointSignal);
  if (!resume.empty()) {
    // Only in a crawl's directory: a resume of a wrong one (refused) leaves
    // nothing in it.
    if (Crawl::IsOutputDir(resume)) SetUpLog(resume);
    std::string warning;
    crawl = Crawl::Resume(resume, sets, &warning, Joiner());
    if (!crawl.ok()) return Fail(crawl.status(), false);
    if (!warning.empty()) std::fprintf(stderr, "crawler: warning: %s\n", warning.c_str());
  } else {
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
    for (const std::string& p : seeds->problems)
      std::fprintf(stderr, "crawler: skipped seed: %s\n", p.c_str());
    SetUpLog(out);
    std::vector<std::string> skipped;
    crawl = Crawl::Create(*config, seeds->urls, out, &skipped, Joiner());
    if (!crawl.ok()) return Fail(crawl.status(), false);
    for (const std::string& p : skipped) {
      spdlog::warn("skipped seed: {}", p);
      std::fprintf(stderr, "crawler: skipped seed: %s\n", p.c_str());
    }
    spdlog::info("crawl of {} seeds into {} started", seeds->urls.size(), out);
    if (config->fetch.insecure) {
      std::fprintf(stderr,
                   "crawler: warning: fetch.insecure = true: TLS certificates are NOT "
                   "checked\n");
    }
  }
  if (std::string m = (*crawl)->MetricsUrl(); !m.empty())
    std::fprintf(stderr, "crawler: metrics: serving %s\n", m.c_str());
  auto summary = [&] {
    Progress progress;  // its destructor ends the status line
    return (*crawl)->Run(g_stop, std::ref(progress), &g_checkpoint, &g_stop_now);
  }();
  if (g_leave.load()) (*crawl)->LeaveOnStop();
  // A failure of a running crawl is an output failure (exit 1), except a
  // setup found wrong meanwhile (exit 2: a cluster job that Redis lost); the
  // engine has logged it ("crawl stopped: ...").
  if (!summary.ok()) {
    std::fprintf(stderr, "crawler: %s\n", summary.status().message().c_str());
    if ((*crawl)->Fenced())
      return EndFenced(std::move(*crawl), resume.empty() ? out : resume);
    return summary.status().code() == crawler::Status::Code::kInvalidArgument
               ? kExitBadInput
               : kExitCrawlError;
  }
  PrintSummary(*summary, resume.empty() ? out : resume);
  return !summary->stopped && !summary->lost.empty() ? kExitLosses : kExitOk;
}

// `crawler normalize`: why did these two URLs (not) dedup? One line per
// input (arguments, or stdin lines when there are none): the normalized URL,
// i.e. the dedup key under `options`, or "error: <reason>". With --base, the
// inputs are hrefs resolved against it as a browser would. Exit code 0 if
// every input normalized, 1 if any did not.
int RunNormalize(const std::string& base, const std::vector<std::string>& urls,
                 const crawler::parsers::UrlOptions& options) {
  int failed = 0;
  auto one = [&](const std::string& u) {
    auto r = base.empty() ? crawler::parsers::NormalizeUrl(u, options)
                          : crawler::parsers::ResolveHref(base, u, options);
    if (r.ok()) {
      std::printf("%s\n", r->c_str());
    } else {
      std::printf("error: %s\n", r.status().message().c_str());
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

CLI::App* AddNormalize(CLI::App& app, std::string* base, std::vector<std::string>* urls,
                       crawler::parsers::UrlOptions* url_options) {
  CLI::App* normalize = app.add_subcommand(
      "normalize", "print the dedup key of each URL (why did two URLs (not) dedup?)");
  normalize->add_option("--base", *base,
                        "resolve inputs against this URL, as a browser would");
  normalize->add_option("urls", *urls, "URLs (default: stdin, one per line)");
  normalize->add_flag("--sort-query", url_options->sort_query, "sort query parameters");
  normalize->add_flag("--strip-tracking", url_options->strip_tracking,
                      "drop utm_* and other tracking parameters");
  normalize->add_flag("--strip-session-ids", url_options->strip_session_ids,
                      "drop session-id parameters");
  normalize->add_flag("--strip-www", url_options->strip_www, "drop a leading www.");
  return normalize;
}

// `crawler index WARC...`: the CDXJ index of each WARC file, written beside
// it (crawl-NNNNN.warc.gz -> crawl-NNNNN.cdxj), for files that have none
// (a crawl with output.cdxj = false, or another tool's WARC of one gzip
// member per record). Exit code 0 if every file was indexed, 2 if any was
// not (named, with why).
int RunIndex(const std::vector<std::string>& warcs) {
  int rc = kExitOk;
  for (const std::string& w : warcs) {
    auto n = crawler::output::IndexWarc(w);
    if (n.ok()) {
      std::printf("%s: %llu records indexed\n", w.c_str(),
                  static_cast<unsigned long long>(*n));
    } else {
      std::fprintf(stderr, "crawler index: %s\n", n.status().message().c_str());
      rc = kExitBadInput;
    }
  }
  return rc;
}

// `crawler wacz OUT -o FILE.wacz` (crawler/wacz.h). Exit code 0, 2 for a
// directory that cannot be packaged (named, with why), 1 for an I/O error.
int RunWacz(const std::string& out, const std::string& wacz,
            const std::vector<std::string>& with) {
  auto s = crawler::archive::WriteWacz(out, wacz, crawler::report::Software(), with);
  if (!s.ok()) {
    std::fprintf(stderr, "crawler wacz: %s\n", s.status().message().c_str());
    return s.status().code() == crawler::Status::Code::kInvalidArgument ? kExitBadInput
                                                                        : kExitCrawlError;
  }
  const std::string at =
      s->checkpoint == 0
          ? ""
          : " (as checkpoint " + std::to_string(s->checkpoint) + " has it)";
  const std::string revisits =
      s->not_modified_resolved == 0
          ? ""
          : " (" + std::to_string(s->not_modified_resolved) +
                " not-modified revisits indexed with their capture's status)";
  std::printf("%s: %llu WARC files, %llu records indexed%s, %llu pages, %.1f MB%s\n",
              wacz.c_str(), static_cast<unsigned long long>(s->warcs),
              static_cast<unsigned long long>(s->records), revisits.c_str(),
              static_cast<unsigned long long>(s->pages),
              static_cast<double>(s->bytes) / 1e6, at.c_str());
  return kExitOk;
}

// `crawler frobnicate`: CLI11 says only "A subcommand is required"; name
// the word, and the commands there are.
bool UnknownCommand(CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return false;
  std::string names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == argv[1]) return false;
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  std::fprintf(stderr, "crawler: unknown command '%s' (commands: %s; crawler --help)\n",
               argv[1], names.c_str());
  return true;
}

CLI::App* AddClusterStats(CLI::App& app, std::string* redis, std::string* job,
                          bool* as_json, std::string* html) {
  CLI::App* cmd = app.add_subcommand(
      "cluster-stats",
      "report on a multi-machine crawl: nodes, shards, stream lag, memory");
  // (A password comes from $CRAWLER_REDIS_PASSWORD, never from argv.)
  cmd->add_option("redis", *redis, "redis://HOST:PORT")->required();
  cmd->add_option("--job", *job, "the job ([cluster] job)")->capture_default_str();
  cmd->add_flag("--json", *as_json, "print JSON instead of text");
  cmd->add_option("--html", *html,
                  "also write one HTML page: the nodes now and the job's time line "
                  "(progress, backlogs, leases, exchange, Redis memory, takeovers)");
  return cmd;
}

CLI::App* AddWacz(CLI::App& app, std::string* out, std::string* wacz,
                  std::vector<std::string>* with) {
  CLI::App* cmd = app.add_subcommand(
      "wacz",
      "package a crawl as WACZ (ReplayWeb.page, Browsertrix); a running one as its last "
      "checkpoint has it");
  cmd->add_option("dir", *out, "the crawl's output directory")->required();
  cmd->add_option("-o,--output", *wacz, "the .wacz file to write")->required();
  cmd->add_option("--with", *with,
                  "an earlier crawl's output directory to package too (dedup.from: its "
                  "captures are what this crawl's revisits refer to); repeatable");
  return cmd;
}

CLI::App* AddIndex(CLI::App& app, std::vector<std::string>* warcs) {
  CLI::App* cmd = app.add_subcommand(
      "index", "write the CDXJ index beside each WARC file (for WARCs without one)");
  cmd->add_option("warcs", *warcs, "WARC files (.warc.gz, one gzip member per record)")
      ->required();
  return cmd;
}

CLI::App* AddCutBack(CLI::App& app, std::string* dir) {
  CLI::App* cmd = app.add_subcommand(
      "cut-back",
      "cut a dead cluster node's outputs (fetch log, WARC files, seen log) back to its "
      "last checkpoint committed in Redis, where its successors began");
  cmd->add_option("dir", *dir, "the dead node's output directory")->required();
  return cmd;
}

}  // namespace

int main(int argc, char** argv) {
  // Where glibc's malloc is the allocator (-DCRAWLER_JEMALLOC=OFF; the
  // sanitizers bring their own, and the default build links jemalloc, which
  // ignores this): glibc gives a worker thread's freed memory back to the
  // kernel as soon as 128 KB sit free at the top of its arena (madvise), and
  // every page parsed next faults it in again; each madvise also flushes the
  // TLB of every core. That churn cost a third of the crawl's CPU on the
  // 50,000-page benchmark (docs/benchmarks.md). Keep up to 64 MB per arena,
  // and stop glibc from moving the mmap threshold.
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  // Until OUT/crawler.log is set up, the engine's log goes nowhere: spdlog's
  // default logger writes to stderr, where main prints every message once.
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("none"));
  CLI::App app{
      "crawler: a polite web crawler with a compact URL-seen filter.\n"
      "Exit codes: 0 done, 1 crawl error, 2 bad usage or bad input, 3 done with "
      "losses."};
  app.require_subcommand(1);
  // CLI11 prints it and ends the parse (CallForVersion), as --help does.
  app.set_version_flag("--version", crawler::report::VersionReport(),
                       "print the version and the libraries' versions");
  std::string seeds, config, out = "crawl-out", base, resume, stats_dir, html;
  bool as_json = false;
  std::vector<std::string> sets, urls;
  CLI::App* crawl =
      app.add_subcommand("crawl", "crawl from a seed list, or resume a crawl");
  auto* seeds_opt = crawl->add_option("--seeds", seeds, "seed URLs, one per line");
  auto* config_opt =
      crawl->add_option("--config", config, "TOML config (default: built-in defaults)");
  auto* out_opt =
      crawl->add_option("--out", out, "output directory")->capture_default_str();
  crawl->add_option("--set", sets, "override a config key: section.key=value");
  auto* resume_opt =
      crawl->add_option("--resume", resume,
                        "resume the crawl in DIR from its last checkpoint "
                        "(its config holds; --set may change limits only)");
  resume_opt->excludes(seeds_opt)->excludes(config_opt)->excludes(out_opt);
  CLI::App* stats =
      app.add_subcommand("stats", "report on a crawl: dedup, frontier, crawl figures");
  stats->add_option("dir", stats_dir, "the crawl's output directory")->required();
  stats->add_flag("--json", as_json, "print JSON instead of text");
  stats->add_option("--html", html,
                    "also write a self-contained HTML report with charts to FILE");
  std::string cluster_redis, cluster_job = "crawl";
  std::string cluster_html;
  CLI::App* cluster_stats =
      AddClusterStats(app, &cluster_redis, &cluster_job, &as_json, &cluster_html);
  crawler::parsers::UrlOptions
      url_options;  // the lossy rules: off unless asked, as in [url]
  AddNormalize(app, &base, &urls, &url_options);
  std::string wacz_dir, wacz_file;
  std::vector<std::string> wacz_with;
  CLI::App* wacz = AddWacz(app, &wacz_dir, &wacz_file, &wacz_with);
  std::vector<std::string> warcs;
  CLI::App* index = AddIndex(app, &warcs);
  std::string cut_dir;
  CLI::App* cut = AddCutBack(app, &cut_dir);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (UnknownCommand(app, argc, argv)) return kExitBadInput;
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitBadInput;
  }
  if (*crawl) {
    if (seeds.empty() && resume.empty()) {
      std::fprintf(stderr, "crawler crawl: --seeds FILE or --resume DIR is required\n");
      return kExitBadInput;
    }
    return RunCrawl(seeds, config, out, sets, resume);
  }
  if (*stats) return crawler::report::RunStats(stats_dir, as_json, html);
  if (*cluster_stats)
    return ClusterStats(cluster_redis, cluster_job, as_json, cluster_html);
  if (*index) return RunIndex(warcs);
  if (*wacz) return RunWacz(wacz_dir, wacz_file, wacz_with);
  if (*cut) return RunCutBack(cut_dir);
  return RunNormalize(base, urls, url_options);
}
