// One crawl: Create, Run and Progress (see crawler/crawl.h). The parts it
// wires together are in worker.h (fetch + pipeline), host_table.h, scope.h,
// fetch_log.h, checkpointer.h, stats_writer.h; resume.cc rebuilds a crawl
// from a checkpoint.
#include "crawler/crawl.h"

#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <set>
#include <string>
#include <thread>

#include "archive/earlier.h"
#include "base/file_util.h"
#include "crawl/crawl_impl.h"
#include "crawler/version.h"

namespace crawler::crawl {

using frontier::Clock;

Result<int> LockOut(const std::string& out, double wait_s) {
  std::string path = out + "/.lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(path, "open");
  auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(wait_s));
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (Clock::now() >= until) {
      ::close(fd);
      return Status::Error(
          Status::Code::kInvalidArgument,
          out + ": in use by another crawler process (" + path + " is locked)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return fd;
}

Crawl::Impl::~Impl() {
  checkpointer.reset();  // reaps a writer still running
  cluster.reset();       // sends what is queued, acknowledges what is published
  if (lock_fd >= 0) ::close(lock_fd);
}

double Crawl::Impl::Elapsed() const {
  return elapsed_base + std::chrono::duration<double>(Clock::now() - run_start).count();
}

report::StatsReport Crawl::Impl::Report(bool running) {
  report::StatsReport r =
      stats->Build(running, Elapsed(), spilled_base, checkpointer->figures());
  if (config.recrawl.enabled) {
    r.recrawl.enabled = true;
    r.recrawl.due = history->CountDue(engine::UnixMs(), report::kDueCountCap);
    r.recrawl.due_capped = r.recrawl.due >= report::kDueCountCap;
    if (config.recrawl.adapt == "change-rate") r.recrawl.mu = state.recrawl_mu.load();
  }
  if (cluster) {
    cluster->SetCrawlFigures(r.rates.pages, r.rates.pages_per_s_last_minute);
    r.cluster = cluster->figures();
  }
  return r;
}

void Crawl::Impl::PublishMetrics(bool running) {
  if (!metrics) return;
  auto start = Clock::now();
  report::StatsReport r = Report(running);
  report::ClusterHealth health;
  if (cluster) health = cluster->health();
  std::string text = report::RenderMetrics(
      {r, cluster ? &health : nullptr, metrics->render_s_total(), metrics->renders()});
  metrics->Publish(std::move(text),
                   std::chrono::duration<double>(Clock::now() - start).count());
}

Status Crawl::Impl::Describe(checkpoint::CheckpointInfo* info, bool running) {
  auto series = stats->SeriesBytes();
  if (!series.ok()) return series.status();
  info->series_bytes = *series;
  info->elapsed_s = Elapsed();
  info->config_toml = engine::ConfigToToml(config);
  info->scope_hosts = scope->hosts();
  info->summary = counters.Summary();
  info->summary.spilled = spilled_base + frontier->Stats(Clock::now()).spilled;
  info->started = state.started.load();
  report::StatsReport report = Report(running);
  // Before this process and in it (the filter's own counts start at 0).
  info->dedup = engine::DedupCarried{report.dedup.expected_false_seen,
                                     report.dedup.compactions, report.dedup.compaction_s};
  info->stats = report::ToJson(report);
  return Status::Ok();
}

namespace {

// OUT/history/: a resume restored the checkpoint's image there (resume.cc);
// a new crawl (`sequence` 0) starts empty (a leftover is past any checkpoint)
// but for the payloads of the earlier crawls dedup.from names.
Result<std::unique_ptr<output::History>> OpenHistory(const engine::Config& config,
                                                     const std::string& out,
                                                     uint64_t sequence) {
  const std::string dir = out + "/" + kHistoryDir;
  std::error_code ec;
  if (sequence == 0) std::filesystem::remove_all(dir, ec);
  auto history = output::History::Open(dir);
  if (!history.ok() || sequence != 0) return history;
  for (const std::string& source : config.dedup_from) {
    uint64_t n = 0;
    Status st =
        archive::ReadEarlierCaptures(source, [&](const archive::EarlierCapture& c) {
          ++n;
          return (*history)->AddCapture(
              c.digest, {.uri = c.uri, .record_id = "", .date_ms = c.date_ms});
        });
    if (!st.ok()) return st;
    spdlog::info("dedup.from: {}: {} captures of 200s read", source, n);
  }
  return history;
}

// OUT/warc/'s writer, as the [output] keys say.
output::WarcOptions WarcOptionsOf(const engine::Config& config, const std::string& out) {
  output::WarcOptions wo;
  wo.dir = out + "/warc";
  wo.prefix = config.output.warc_prefix;
  wo.rotate_bytes = config.output.warc_rotate_bytes;
  wo.gzip_level = config.output.warc_gzip_level;
  wo.cdxj = config.output.cdxj;
  wo.operator_info = config.crawl.user_agent;
  wo.software = report::Software();
  return wo;
}

}  // namespace

Result<std::unique_ptr<Crawl::Impl>> BuildCrawl(const engine::Config& config,
                                                const std::string& out, int lock_fd,
                                                std::unique_ptr<dedup::Filter> filter,
                                                engine::Scope scope, uint64_t sequence,
                                                std::span<const uint64_t> log_bytes,
                                                const NodeJoiner* joiner,
                                                const std::vector<std::string>& seeds) {
  auto m = std::make_unique<Crawl::Impl>(config, out, lock_fd);
  spdlog::info("open files: up to {} (RLIMIT_NOFILE's hard limit)", RaiseOpenFileLimit());
  engine::Body::ClearSpool(out + "/spool");
  m->filter = std::move(filter);
  // Before any insert: the log must record every key the filter admits.
  Status logged = m->filter->StartLog(
      out + "/" + checkpoint::kDedupLogDir, config.dedup_compact_growth,
      [](const std::string& msg) { spdlog::warn("{}", msg); }, log_bytes);
  if (!logged.ok()) return logged.WithContext("dedup");
  m->scope = std::make_unique<engine::Scope>(std::move(scope));
  frontier::FrontierOptions fo = config.frontier;
  fo.spill_dir = out + "/frontier";
  auto fr = frontier::Frontier::Create(fo);
  if (!fr.ok()) return fr.status();
  m->frontier = std::move(fr).value();
  auto warc = output::WarcWriter::Open(WarcOptionsOf(config, out));
  if (!warc.ok()) return warc.status();
  m->warc = std::move(warc).value();
  auto log = output::FetchLog::Open(out + "/fetch-log.jsonl");
  if (!log.ok()) return log.status();
  m->log = std::move(log).value();
  auto resolver = engine::Resolver::ForFetch(config.fetch);
  if (!resolver.ok()) return resolver.status();
  m->resolver = std::move(resolver).value();
  // (The pool starts no browser before its first page.)
  if (config.browser.render != "off")
    m->browser = std::make_unique<browser::Pool>(engine::BrowserPoolOptions(config, out));
  auto stats = report::StatsWriter::Open(
      out, {*m->filter, *m->frontier, m->hosts, m->counters, m->resolver.get(),
            m->scope.get(), &m->state.robots_waiting_bytes, m->browser.get()});
  if (!stats.ok()) return stats.status();
  m->stats = std::move(stats).value();
  if (config.cluster.enabled()) {
    if (joiner == nullptr || !joiner->join) return NoCluster();
    auto cluster = joiner->join(config, out, /*resumed=*/sequence > 0, seeds);
    if (!cluster.ok()) return cluster.status();
    m->cluster = std::move(cluster).value();
  }
  if (m->cluster && !config.cluster.shared_dir.empty()) {
    auto seen = output::SeenLog::Open(out + "/seen.log");
    if (!seen.ok()) return seen.status();
    m->seen = std::move(seen).value();
  }
  if (config.recrawl.enabled || config.dedup_payload) {
    auto history = OpenHistory(config, out, sequence);
    if (!history.ok()) return history.status();
    m->history = std::move(history).value();
  }
  if (!config.metrics.listen.empty()) {
    auto metrics = report::MetricsServer::Start(config.metrics.listen);
    if (!metrics.ok()) return metrics.status();
    m->metrics = std::move(metrics).value();
  }
  Crawl::Impl* raw = m.get();
  m->checkpointer = std::make_unique<checkpoint::Checkpointer>(
      out, config.checkpoint,
      checkpoint::Checkpointer::Parts{
          m->gate, *m->filter, *m->frontier, m->hosts, *m->log, *m->warc,
          [raw](checkpoint::CheckpointInfo* info, bool running) {
            return raw->Describe(info, running);
          },
          [raw](uint64_t seq) -> std::optional<checkpoint::OutboxCut> {
            if (!raw->cluster) return std::nullopt;
            return raw->cluster->OnCut(seq);
          },
          [raw](uint64_t seq) {
            if (raw->cluster) raw->cluster->OnPublished(seq);
          },
          m->seen.get(), m->history.get()},
      sequence);
  Status st;
  m->workers = engine::Worker::MakeAll(
      config,
      {m->config, *m->scope, *m->filter, *m->frontier, m->hosts, *m->log, *m->warc,
       m->counters, m->gate, m->results, m->state, m->cluster.get(), m->seen.get(),
       m->history.get(), out + "/spool", m->resolver.get(), m->browser.get()},
      &st);
  if (!st.ok()) return st;
  return m;
}

Status NoCluster() {
  return Status::Error(
      Status::Code::kInvalidArgument,
      "cluster.redis or cluster.sentinels is set, but this program was built without the "
      "cluster (crawler/src/cluster/)");
}

Crawl::Crawl(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Crawl::~Crawl() = default;

Result<std::unique_ptr<Crawl>> Crawl::Create(const engine::Config& config,
                                             const std::vector<std::string>& seeds,
                                             const std::string& out_dir,
                                             std::vector<std::string>* skipped,
                                             const NodeJoiner* joiner) {
  if (config.cluster.enabled() && (joiner == nullptr || !joiner->join))
    return NoCluster();  // before any file of the crawl is written
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec)
    return Status::Error(Status::Code::kIoError,
                         out_dir + ": cannot create: " + ec.message());
  auto scope = engine::Scope::From(config.crawl, seeds);
  if (!scope.ok()) return scope.status();
  auto lock = LockOut(out_dir, 0);
  if (!lock.ok()) return lock.status();
  for (const char* dir : {checkpoint::kCheckpointDir, checkpoint::kCheckpointPrevDir}) {
    if (std::filesystem::exists(out_dir + "/" + dir)) {
      ::close(*lock);
      return Status::Error(Status::Code::kInvalidArgument,
                           out_dir + " already holds a crawl (" + dir +
                               "/): resume it with `crawler crawl --resume " + out_dir +
                               "` or choose another --out");
    }
  }
  // Seeds pass the same scope check as links.
  std::vector<std::string> admitted;
  for (const std::string& s : seeds) {
    if (scope->Allows(s)) {
      admitted.push_back(s);
    } else if (skipped != nullptr) {
      skipped->push_back(
          s + ": out of scope (crawl.scope_hosts, scope_domains, include, exclude)");
    }
  }
  // How the crawl started, before anything else: a crawl stopped before its
  // first checkpoint (Ctrl-C, kill -9 or a power cut in its first second) is
  // resumed by starting it again from these (Resume). All the seeds given:
  // the scope is built from them. The config is written last: it marks the
  // pair complete.
  std::string seed_text;
  for (const std::string& s : seeds) seed_text += s + "\n";
  Status st = WriteFileAtomic(out_dir + "/" + checkpoint::kStartSeeds, seed_text);
  if (st.ok())  // the owner's only, like each checkpoint's config.toml
    st = WriteFileAtomic(out_dir + "/" + checkpoint::kStartConfig,
                         engine::ConfigToToml(config), true, 0600);
  if (!st.ok()) {
    ::close(*lock);
    return st;
  }
  auto filter = dedup::Filter::Create(config.dedup);
  if (!filter.ok()) {
    ::close(*lock);
    return filter.status().WithContext("dedup");
  }
  auto impl = BuildCrawl(config, out_dir, *lock, std::move(filter).value(),
                         std::move(scope).value(), 0, {}, joiner, admitted);
  if (!impl.ok()) return impl.status();
  (*impl)->seeds = std::move(admitted);
  return std::unique_ptr<Crawl>(new Crawl(std::move(impl).value()));
}

namespace {

// The seeds of a new crawl (then checkpoint 1: a crash at any later moment
// resumes), or the robots.txt fetches a resumed crawl must start again.
Status Seed(Crawl::Impl& m) {
  engine::GateUnit unit(m.gate);  // open: no worker runs yet
  engine::Worker& first = *m.workers[0];
  if (!m.seeds.empty()) {
    // A cluster node sends the seeds it does not own to their owners.
    std::vector<frontier::UrlEntry> seeds, theirs;
    for (const std::string& s : m.seeds) {
      (m.cluster && !m.cluster->Owns(s) ? theirs : seeds)
          .push_back(frontier::UrlEntry{s, 0, "", 0});
    }
    if (!theirs.empty()) m.cluster->Ship(theirs);
    Status st = first.Admit(unit.pass(), std::move(seeds));
    if (!st.ok()) return st;
    m.seeds.clear();
    return Status::Ok();
  }
  for (const engine::RobotsFetchToStart& r : m.resume_robots)
    first.StartRobots(unit.pass(), r.host, r.url, r.hops);
  m.resume_robots.clear();
  return Status::Ok();
}

// Starts the cluster node, if any (it waits for the job to start), then
// admits the seeds (or a resume's robots.txt fetches).
Status StartNodeAndSeed(Crawl::Impl& m, const std::atomic<bool>& stop) {
  if (m.cluster) {
    // In a gate pass, like local_idle: a checkpoint forks only with the gate
    // closed, so never while this holds the frontier's mutex.
    // Both are the exchange thread's, which never waits at the gate: a cut
    // waits there for a worker's unit (restoring 200,000 taken-over URLs took
    // 0.8 s), and the heartbeats would wait with it. While a checkpoint is
    // being cut the node counts as busy and shows no backlog (neither ends
    // the job nor gives work away); the next round asks again.
    m.cluster->SetBacklogSource([&m](const Node::HostVisitor& f) {
      engine::GateUnit unit(m.gate, std::try_to_lock);
      if (!unit.entered()) return false;
      // The hosts whose robots.txt is being fetched (as a handoff's drain
      // sees them: Worker::HandOff), noted first: the host table's lock is
      // not taken under the frontier's.
      std::set<std::string, std::less<>> fetching;
      (void)m.hosts.RobotsFetching(unit.pass(), [&](std::string_view host) {
        fetching.emplace(host);
        return false;
      });
      m.frontier->ForEachQueued([&](std::string_view host, uint64_t queued) {
        f(host, queued, fetching.find(host) == fetching.end());
      });
      return true;
    });
    // Idle: nothing to do, nor ever again but what other nodes send. So a
    // continuous crawl ([recrawl], whose history brings its URLs back) is
    // never idle, as Worker::Finished never ends it: the job would be
    // marked done (sticky in Redis, and its acknowledgements "last") the
    // first moment all nodes waited for their next due URL.
    Status st = m.cluster->Start(stop, [&m] {
      engine::GateUnit unit(m.gate, std::try_to_lock);
      return unit.entered() && m.state.busy.load() == 0 && m.results.Empty() &&
             (m.state.max_pages_hit.load() ||
              (m.frontier->Empty() && !m.config.recrawl.enabled));
    });
    if (!st.ok()) return st;
  }
  return Seed(m);
}

// [recrawl]: the URLs the history says are due go back into their hosts'
// queues (no filter: the history is the authority for URLs it holds), under
// their hosts' politeness, and are marked queued (no due time) until their
// fetch writes the next one. In a gate pass, so a checkpoint's history image
// and frontier agree.
Status ScheduleDue(Crawl::Impl& m) {
  engine::GateUnit unit(m.gate);
  const uint64_t now = engine::UnixMs();
  // A bounded batch: a backlog drains over several rounds. A cluster
  // node's record of a shard not owned here now, being handed over (its
  // record travels in the handoff's checkpoint) or arriving (a takeover's
  // import, before ShardsLoaded), is due a second later: by then it is
  // owned, or gone with its shard (revisits.h).
  auto taken = m.history->TakeDue(now, 1000, [&](std::string_view url) -> uint64_t {
    return m.cluster == nullptr || m.cluster->Owns(url) ? 0 : now + 1000;
  });
  if (!taken.ok()) return taken.status();
  for (auto& [url, r] : *taken) {
    if (r.due_ms != 0) continue;
    frontier::UrlEntry e{std::move(url), r.depth, "", 0};
    e.kind = static_cast<frontier::UrlEntry::Kind>(r.kind);
    e.revisit = true;  // after the host's new URLs, in due order
    Status st = m.frontier->Requeue(std::move(e));
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

// "change-rate": the price of freshness follows the history's revisit
// demand against the budget of one revisit per interval_s per URL.
void TuneMu(Crawl::Impl& m) {
  const engine::CrawlSummary s = m.counters.Summary();
  uint64_t urls = 0;
  for (const auto& [bucket, n] : s.revisit_intervals) urls += n;
  const double mu = engine::NextMu(m.state.recrawl_mu.load(),
                                   static_cast<double>(s.revisit_demand_uhz) / 1e6, urls,
                                   m.config.recrawl);
  m.state.recrawl_mu.store(mu);
}

// The caller's stop flags (first, second signal); the workers' (drain, leave).
struct Stops {
  const std::atomic<bool>& stop;
  const std::atomic<bool>* stop_now;
  std::atomic<bool>& halt;
  std::atomic<bool>& halt_now;
};

// The Run thread while the workers crawl: checkpoints, stats, progress;
// returns the first output failure. `halt` (on `stop`, max_duration_s)
// drains the workers; `halt_now` (on `stop_now`, or stop_grace_s after
// `halt`) stops them at once.
Status Supervise(Crawl::Impl& m, Stops s, const Crawl::ProgressFn& progress,
                 std::atomic<bool>* checkpoint_request,
                 const std::function<engine::CrawlProgress()>& progress_now,
                 const std::vector<std::atomic<bool>>& done) {
  auto last_progress = Clock::now(), last_stats = Clock::now(), last_due = Clock::now();
  std::optional<Clock::time_point> halted;
  const double max_s = m.config.crawl.max_duration_s;
  while (!std::all_of(done.begin(), done.end(),
                      [](const std::atomic<bool>& d) { return d.load(); })) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (s.stop.load() ||
        (max_s > 0 &&
         std::chrono::duration<double>(Clock::now() - m.run_start).count() >= max_s))
      s.halt = true;
    if (s.halt.load() && !halted) {
      halted = Clock::now();
      spdlog::info("stopping: no new requests; those in flight finish (at most {:.0f} s)",
                   m.config.checkpoint.stop_grace_s);
    }
    if ((s.stop_now != nullptr && s.stop_now->load()) ||
        (halted && std::chrono::duration<double>(Clock::now() - *halted).count() >=
                       m.config.checkpoint.stop_grace_s))
      s.halt_now = true;
    std::atomic<bool>& halt = s.halt;
    Status st = m.checkpointer->Poll(false);
    if (!st.ok()) return st;
    if (m.cluster && m.cluster->Failed()) return m.cluster->failure();
    auto now = Clock::now();
    bool requested = checkpoint_request != nullptr && checkpoint_request->exchange(false);
    // A cluster node handing shards over cuts their source checkpoint now.
    if (m.cluster && m.cluster->CheckpointWanted()) requested = true;
    if (m.config.recrawl.enabled && !halt.load() &&
        now - last_due >= std::chrono::milliseconds(200)) {
      last_due = now;
      st = ScheduleDue(m);
      if (!st.ok()) return st;
    }
    if (!halt.load() && !m.state.failed() &&
        m.checkpointer->Due(m.counters.PagesDone(), requested) &&
        !(m.cluster && (m.cluster->CommitPending() || m.cluster->HoldCuts()))) {
      st = m.checkpointer->Cut(true, m.counters.PagesDone());
      if (!st.ok()) return st;
    }
    if (m.metrics && m.metrics->Wanted()) m.PublishMetrics(true);
    if (now - last_stats >= std::chrono::seconds(2)) {
      last_stats = now;
      if (m.config.recrawl.enabled && m.config.recrawl.adapt == "change-rate") TuneMu(m);
      st = m.stats->Write(m.Report(true));
      if (!st.ok()) return st;
    }
    if (progress && now - last_progress >= std::chrono::seconds(1)) {
      last_progress = now;
      progress(progress_now());
    }
  }
  return Status::Ok();
}

// After the workers ended normally: outputs synced, the summary, the last
// checkpoint (resumable after a stop) and the final stats.
Result<engine::CrawlSummary> Finish(Crawl::Impl& m, bool stopped,
                                    Clock::time_point start) {
  Status st = m.log->Sync();
  if (st.ok()) st = m.warc->Sync();
  if (!st.ok()) return st;
  engine::CrawlSummary s = m.counters.Summary();
  s.stopped = stopped;
  s.spilled = m.spilled_base + m.frontier->Stats(Clock::now()).spilled;
  s.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  s.warc_dir = m.out + "/warc";
  s.fetch_log = m.log->path();
  m.counters.Restore(s, m.counters.Carried());
  st = m.stats->Write(m.Report(false));
  // A cluster node with shared_dir cuts its last checkpoint only once the one
  // before is committed (Cluster::CommitPending; Redis may be down).
  for (int i = 0; i < 100 && m.cluster && m.cluster->CommitPending(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (m.cluster && m.cluster->CommitPending()) {
    spdlog::warn(
        "cluster: the last checkpoint is not committed yet (Redis down?): no final "
        "checkpoint; --resume redoes the work since the last committed one");
  } else if (st.ok()) {
    st = m.checkpointer->Cut(false, s.fetched + s.failed);
  }
  if (st.ok()) st = m.warc->Close();  // its index sorted: ready with the file
  if (st.ok()) st = m.stats->Write(m.Report(false));
  if (!st.ok()) return st;
  m.PublishMetrics(false);
  return s;
}

}  // namespace

Result<engine::CrawlSummary> Crawl::Run(const std::atomic<bool>& stop,
                                        const ProgressFn& progress,
                                        std::atomic<bool>* checkpoint_request,
                                        const std::atomic<bool>* stop_now) {
  Impl& m = *impl_;
  auto start = Clock::now();
  m.run_start = start;
  (void)m.Report(true);  // primes the FPR estimate the workers use
  m.PublishMetrics(true);
  bool fresh = !m.seeds.empty() && m.resume_robots.empty();
  Status st;
  // Seeding is work begun: until the seeds are in the frontier or shipped
  // (the outbox), a cluster node is not idle. With 200,200 seeds every node
  // of a test published "idle" between Start and Seed, the job was marked
  // done at its start, and each node then ended once it ran out of local
  // work, whatever the others still sent it (cluster_test "Cluster takeover
  // of a big shard*": the takers ended before the big shard loaded).
  m.state.recrawl_mu.store(engine::InitialMu(m.config.recrawl));
  m.state.busy.fetch_add(1);
  st = StartNodeAndSeed(m, stop);
  m.state.busy.fetch_sub(1);
  if (!st.ok()) return st;
  if (fresh) st = m.checkpointer->Cut(false, 0);
  if (!st.ok()) return st;
  std::vector<std::atomic<bool>> done(m.workers.size());
  std::vector<std::thread> threads;
  std::atomic<bool> halt{stop.load()}, halt_now{stop_now != nullptr && stop_now->load()};
  for (size_t i = 0; i < m.workers.size(); ++i) {
    threads.emplace_back([&, i] {
      m.workers[i]->Loop(halt, halt_now);
      done[i] = true;
    });
  }
  st = Supervise(
      m, {stop, stop_now, halt, halt_now}, progress, checkpoint_request,
      [this] { return Progress(); }, done);
  if (!st.ok()) m.state.Fail(st);
  for (std::thread& t : threads) t.join();
  st = m.checkpointer->Poll(true);
  if (!st.ok()) m.state.Fail(st);
  if (m.state.failed()) return m.state.error();
  return Finish(m, halt.load() || m.state.max_pages_hit.load(), start);
}

void Crawl::LeaveOnStop() {
  if (impl_->cluster) impl_->cluster->LeaveOnStop();
}

bool Crawl::Fenced() const { return impl_->cluster && impl_->cluster->Fenced(); }

std::string Crawl::MetricsUrl() const {
  const Impl& m = *impl_;
  return m.metrics ? m.metrics->url() : std::string();
}

engine::CrawlProgress Crawl::Progress() const {
  const Impl& m = *impl_;
  engine::CrawlProgress p;
  p.summary = m.counters.Summary();
  p.frontier = m.frontier->Stats(Clock::now());
  dedup::FilterStats fs = m.filter->Stats();
  p.dedup_items = fs.items;
  p.dedup_fpr = fs.estimated_fpr;
  p.dedup_bytes = fs.bytes;
  if (m.cluster) {
    report::ClusterReport c = m.cluster->figures();
    p.cluster = c.node + " " + std::to_string(c.shards_owned) + " shards, sent " +
                std::to_string(c.urls_sent) + " + " + std::to_string(c.urls_queued) +
                " queued, received " + std::to_string(c.urls_received);
    if (!c.sends_blocked.empty()) {
      p.cluster +=
          ", blocked: Redis " +
          (c.sends_blocked.rfind("full", 0) == 0 ? std::string("full")
                                                 : "refuses (" + c.sends_blocked + ")") +
          ", " + std::to_string(c.urls_queued) + " URLs waiting to send";
    }
    if (c.redis_down_s > 0)
      p.cluster +=
          ", redis: down " + std::to_string(static_cast<int>(c.redis_down_s)) + " s";
  }
  return p;
}

}  // namespace crawler::crawl
