// Crawl::Resume: select a checkpoint -> cut the outputs back to it -> rebuild
// the crawl's state from it (see crawler/crawl.h).
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <thread>

#include "base/file_util.h"
#include "crawl/crawl_impl.h"
#include "crawler/checkpoint.h"
#include "crawler/seeds.h"
#include "output/cdxj.h"

namespace crawler::crawl {
namespace {

namespace fs = std::filesystem;
using frontier::Clock;

Status CheckOverrides(const std::vector<std::string>& overrides) {
  const auto& allowed = Crawl::ResumableKeys();
  for (const std::string& o : overrides) {
    std::string key = o.substr(0, o.find('='));
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string list;
    for (const std::string& k : allowed) list += (list.empty() ? "" : ", ") + k;
    return Status::Invalid(
        "--set " + o + ": " + key +
        " cannot be changed on --resume: the crawl keeps the config it was started with; "
        "only limits may be overridden (" +
        list + ")");
  }
  return Status::Ok();
}

// OUT/checkpoint/, or OUT/checkpoint.prev/ when that is damaged (*warning
// says why). A damaged checkpoint is kCorruption & co; unreadable, kIoError.
Result<checkpoint::LoadedCheckpoint> Select(const std::string& out, std::string* warning,
                                            bool* fell_back) {
  const std::string cur = out + "/" + checkpoint::kCheckpointDir,
                    prev = out + "/" + checkpoint::kCheckpointPrevDir;
  bool repaired = false;
  Status st = checkpoint::RepairCutPublish(out, &repaired);
  if (!st.ok()) return st.WithContext("cannot resume " + out);
  if (repaired) {
    spdlog::warn(
        "{}: a checkpoint publish was cut between its renames (checkpoint/ older than "
        "checkpoint.prev/): swapped them back",
        out);
  }
  std::string first_problem = cur + ": missing (a crash between publishing steps)";
  if (fs::exists(cur)) {
    auto loaded = checkpoint::LoadCheckpoint(cur);
    if (loaded.ok()) return loaded;
    first_problem = loaded.status().message();
  }
  if (!fs::exists(prev)) {
    return Status::Error(
        Status::Code::kCorruption,
        "cannot resume " + out + ": " + first_problem + "; and there is no " + prev);
  }
  auto loaded = checkpoint::LoadCheckpoint(prev);
  if (!loaded.ok()) {
    return loaded.status().WithContext("cannot resume " + out + ": " + first_problem +
                                       "; and");
  }
  *fell_back = true;
  *warning = first_problem + "; resuming from the previous checkpoint, " + prev;
  return loaded;
}

// A cluster node with shared_dir resumes from its last *committed*
// checkpoint (cluster.h): other nodes may have taken its shards over from
// it, so a newer one published but not committed is not the crawl's. It is
// checkpoint/ or, when checkpoint/ was published after it, checkpoint.prev/.
// When the committed one is checkpoint/ and damaged (`fell_back`), the node
// resumes from checkpoint.prev/, the commit before it: nothing Redis no
// longer keeps is newer (inbox.h), and a taker of its shards loads that one
// too (cluster/membership/shard_loads.h, ReadShards). Its next checkpoint then skips
// the damaged one's sequence (*skip_to), so "NODE SEQ" never names two
// checkpoints.
Status SelectCommitted(const engine::Config& config, const std::string& out,
                       const NodeJoiner* joiner, checkpoint::LoadedCheckpoint* cp,
                       bool fell_back, uint64_t* skip_to) {
  const engine::ClusterConfig& c = config.cluster;
  if (!c.enabled() || c.shared_dir.empty()) return Status::Ok();
  if (joiner == nullptr || !joiner->last_commit) return NoCluster();
  auto last = joiner->last_commit(config);
  if (!last.ok()) return last.status();
  if (!last->has_value())
    return Status::Ok();  // nothing committed: nobody took anything from it
  const uint64_t committed = **last;
  if (cp->info.sequence == committed) return Status::Ok();
  if (fell_back && cp->info.sequence < committed) {
    spdlog::warn(
        "the last committed checkpoint, {}, is damaged: resuming from checkpoint.prev "
        "({}); its shards are restored from it here or loaded from it by the node that "
        "takes them, and their pages fetched since are fetched again",
        committed, cp->info.sequence);
    *skip_to = committed;
    return Status::Ok();
  }
  const std::string prev = out + "/" + checkpoint::kCheckpointPrevDir;
  auto older = cp->info.sequence > committed
                   ? checkpoint::LoadCheckpoint(prev)
                   : Result<checkpoint::LoadedCheckpoint>(
                         Status::Error(Status::Code::kCorruption, "newer"));
  if (!older.ok() || older->info.sequence != committed) {
    return Status::Error(
        Status::Code::kCorruption,
        "cannot resume " + out + ": Redis says its last committed " + "checkpoint is " +
            std::to_string(committed) + ", and neither checkpoint/ (" +
            std::to_string(cp->info.sequence) + ") nor " + prev + " holds it");
  }
  spdlog::info(
      "resuming from the last committed checkpoint {} ({}), not {} (kept as "
      "checkpoint.uncommitted/)",
      committed, prev, cp->info.sequence);
  *cp = std::move(older).value();
  // The committed one becomes checkpoint/ again, so the next publish keeps it
  // as checkpoint.prev/ (a taker may still load from it).
  const std::string cur = out + "/" + checkpoint::kCheckpointDir,
                    aside = out + "/checkpoint.uncommitted";
  std::error_code ec;
  fs::remove_all(aside, ec);
  fs::rename(cur, aside, ec);
  if (!ec) fs::rename(prev, cur, ec);
  if (ec) return Status::Error(Status::Code::kIoError, out + ": " + ec.message());
  cp->dir = cur;
  cp->frontier.dir = cur;  // its spill files moved with it
  return SyncDir(out);
}

// Cuts `path` back to `bytes` (what the checkpoint recorded); sets *cut if
// it removed anything.
Status Cut(const std::string& path, uint64_t bytes, bool must_exist,
           bool* cut = nullptr) {
  std::error_code ec;
  uint64_t size = fs::exists(path, ec) ? fs::file_size(path, ec) : 0;
  if (ec) return Status::Error(Status::Code::kIoError, path + ": " + ec.message());
  if (size < bytes && (must_exist || size > 0)) {
    return Status::Invalid(
        path + " is " + std::to_string(size) + " bytes but the checkpoint recorded " +
        std::to_string(bytes) +
        ": it lost data after the checkpoint was taken; cannot resume safely");
  }
  if (size > bytes && ::truncate(path.c_str(), static_cast<off_t>(bytes)) != 0)
    return IoError(path, "truncate");
  if (cut != nullptr) *cut = size > bytes;
  return Status::Ok();
}

// The WARC file index of `name` if it is one of ours ("PREFIX-NNNNN.warc.gz").
std::optional<unsigned> WarcIndex(const std::string& name, const std::string& prefix) {
  unsigned index = 0;
  if (name.rfind(prefix + "-", 0) == 0 && name.ends_with(".warc.gz") &&
      std::sscanf(name.c_str() + prefix.size() + 1, "%u.warc.gz", &index) == 1)
    return index;
  return std::nullopt;
}

// After the cut: each WARC file kept has its CDXJ index, and the one that
// was cut (or was never closed, so has only a .cdxj.open of its lines) has
// it made again from the file itself: exactly its records (warc.h).
Status RepairIndexes(const std::string& warc_dir, const engine::OutputConfig& output,
                     const std::string& cut_file, bool cut) {
  std::error_code ec;
  std::vector<std::string> warcs;
  for (const auto& entry : fs::directory_iterator(warc_dir, ec)) {
    std::string name = entry.path().filename().string();
    if (WarcIndex(name, output.warc_prefix)) warcs.push_back(entry.path().string());
  }
  if (ec) return Status::Error(Status::Code::kIoError, warc_dir + ": " + ec.message());
  for (const std::string& warc : warcs) {
    const std::string index = output::cdxj::PathFor(warc);
    if (output.cdxj && ((cut && warc.ends_with("/" + cut_file)) || !fs::exists(index))) {
      auto lines = output::IndexWarc(warc);
      if (!lines.ok()) return lines.status();
      spdlog::info("{}: indexed again from the file ({} records)", index, *lines);
    }
    fs::remove(index + ".open", ec);
    if (ec)
      return Status::Error(Status::Code::kIoError, index + ".open: " + ec.message());
  }
  return Status::Ok();
}

// Removes what was written after the checkpoint. Only with the checkpoint
// fully loaded.
Status Repair(const std::string& out, const checkpoint::CheckpointInfo& info,
              const engine::OutputConfig& output) {
  Status st =
      Cut(out + "/fetch-log.jsonl", info.fetch_log_bytes, info.fetch_log_bytes > 0);
  bool warc_cut = false;
  if (st.ok())
    st = Cut(out + "/warc/" + info.warc_file, info.warc_bytes, true, &warc_cut);
  if (st.ok()) st = Cut(out + "/stats-series.jsonl", info.series_bytes, false);
  if (st.ok()) st = Cut(out + "/seen.log", info.seen_log_bytes, false);
  if (!st.ok()) return st;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(out + "/warc", ec)) {
    std::string name = entry.path().filename().string();
    auto index = WarcIndex(name, output.warc_prefix);
    if (index && *index > info.warc_index) {
      const std::string path = entry.path().string();
      for (const std::string& p :
           {path, output::cdxj::PathFor(path), output::cdxj::PathFor(path) + ".open"}) {
        fs::remove(p, ec);
        if (ec)
          return Status::Error(Status::Code::kIoError, p + ": remove: " + ec.message());
      }
    }
  }
  st = RepairIndexes(out + "/warc", output, info.warc_file, warc_cut);
  if (!st.ok()) return st;
  fs::remove_all(out + "/frontier", ec);
  if (!ec) fs::remove_all(out + "/" + checkpoint::kCheckpointTmpDir, ec);
  if (ec)
    return Status::Error(Status::Code::kIoError,
                         out + ": cannot clear scratch files: " + ec.message());
  return Status::Ok();
}

// The loaded state into a freshly built crawl.
Status Restore(Crawl::Impl& m, checkpoint::LoadedCheckpoint& cp) {
  const checkpoint::CheckpointInfo& info = cp.info;
  engine::CrawlSummary summary = info.summary;
  summary.stopped = false;
  m.counters.Restore(summary, info.dedup);
  m.elapsed_base = info.elapsed_s;
  m.spilled_base = info.summary.spilled;
  auto hosts = engine::HostTable::Decode(cp.hosts_bin, cp.dir + "/hosts.bin");
  if (!hosts.ok()) return hosts.status();
  // The domains' budgets: this node's, whichever shards it holds (a cluster
  // node counts what it admits).
  auto domains = engine::HostTable::DecodeDomains(cp.hosts_bin, cp.dir + "/hosts.bin");
  if (!domains.ok()) return domains.status();
  m.hosts.RestoreDomains(std::move(domains).value());
  auto now = Clock::now();
  auto leased = cp.frontier.LeasedPerHost();
  uint64_t in_flight = 0;
  for (const auto& [host, n] : leased) in_flight += n;
  uint64_t urls = cp.frontier.Urls(), host_count = cp.frontier.hosts.size();
  if (m.cluster && !m.config.cluster.shared_dir.empty()) {
    // Restored at Start, only the shards this node still holds (cluster.h).
    engine::ShardState own;
    own.own = true;
    own.from = "this node's checkpoint " + std::to_string(info.sequence);
    own.sequence = info.sequence;
    own.hosts = std::move(hosts).value();
    // Split by shard later, after a later checkpoint may have replaced this
    // one: its spilled URLs are read now.
    Status read = cp.frontier.ReadSpills();
    if (!read.ok()) return read;
    own.frontier = std::move(cp.frontier);
    m.cluster->StashOwn(std::move(own));
  } else {
    m.resume_robots = m.hosts.Restore(std::move(hosts).value(), leased, now);
    Status st = frontier::RestoreFrontier(std::move(cp.frontier), now, m.frontier.get());
    if (!st.ok()) return st;
  }
  m.state.started = info.started > in_flight ? info.started - in_flight : 0;
  Status st;
  if (m.cluster) {
    st = m.cluster->RestoreOutbox(cp.outbox, cp.dir + "/outbox.txt");
    if (!st.ok()) return st;
    st = m.cluster->RestoreSpill();
    if (!st.ok()) return st;
  }
  spdlog::info(
      "resumed from {} (checkpoint {}): {} URLs queued ({} were in flight), {} hosts",
      cp.dir, info.sequence, urls, in_flight, host_count);
  return Status::Ok();
}

// A crawl stopped before its first checkpoint fetched nothing yet (workers
// start after it): it starts again from the seeds and config Create wrote.
Result<std::unique_ptr<Crawl>> StartAgain(const std::string& out_dir,
                                          const std::vector<std::string>& overrides,
                                          std::string* warning,
                                          const NodeJoiner* joiner) {
  // Waits, like a resume, for the stopped process's lock to go.
  auto lock = LockOut(out_dir, 10);
  if (!lock.ok()) return lock.status();
  ::close(*lock);
  auto config = engine::LoadConfig(out_dir + "/" + checkpoint::kStartConfig, overrides);
  if (!config.ok()) return config.status();
  auto seeds = engine::ReadSeeds(out_dir + "/" + checkpoint::kStartSeeds, config->url);
  if (!seeds.ok()) return seeds.status();
  *warning = out_dir +
             " holds no checkpoint yet (the crawl was stopped before its first one): " +
             "starting it again from its " + std::to_string(seeds->urls.size()) +
             " seeds (" + checkpoint::kStartSeeds + ")";
  return Crawl::Create(*config, seeds->urls, out_dir, nullptr, joiner);
}

}  // namespace

const std::vector<std::string>& Crawl::ResumableKeys() {
  static const std::vector<std::string> keys = {
      "crawl.max_pages",           "crawl.max_duration_s",    "crawl.workers",
      "crawl.max_connections",     "fetch.connect_timeout_s", "fetch.timeout_s",
      "fetch.low_speed_bytes",     "fetch.low_speed_time_s",  "checkpoint.interval_s",
      "checkpoint.interval_pages", "dedup.compact_growth"};
  return keys;
}

Result<uint64_t> Crawl::CutBackToCommitted(const std::string& out_dir,
                                           const NodeJoiner* joiner) {
  auto lock = LockOut(out_dir, 10);
  if (!lock.ok()) return lock.status();
  auto cut_back = [&]() -> Result<uint64_t> {
    std::string warning;
    bool fell_back = false;
    auto loaded = Select(out_dir, &warning, &fell_back);
    if (!loaded.ok()) return loaded.status();
    auto config = engine::LoadConfig(loaded->config_path, {});
    if (!config.ok()) return config.status();
    if (!config->cluster.enabled()) {
      return Status::Invalid(
          out_dir +
          ": not a cluster node's crawl: nothing to cut back "
          "(`crawler crawl --resume` goes on from its last checkpoint)");
    }
    uint64_t skip_to = 0;
    Status st = SelectCommitted(*config, out_dir, joiner, &*loaded, fell_back, &skip_to);
    if (st.ok()) st = Repair(out_dir, loaded->info, config->output);
    if (!st.ok()) return st;
    return loaded->info.sequence;
  };
  auto sequence = cut_back();
  ::close(*lock);
  return sequence;
}

bool Crawl::IsOutputDir(const std::string& out_dir) {
  std::error_code ec;
  for (const char* name : {checkpoint::kCheckpointDir, checkpoint::kCheckpointPrevDir,
                           checkpoint::kStartConfig})
    if (fs::exists(out_dir + "/" + name, ec)) return true;
  return false;
}

Result<std::unique_ptr<Crawl>> Crawl::Resume(const std::string& out_dir,
                                             const std::vector<std::string>& overrides,
                                             std::string* warning,
                                             const NodeJoiner* joiner) {
  Status st = CheckOverrides(overrides);
  if (!st.ok()) return st;
  if (!fs::is_directory(out_dir)) return Status::Invalid(out_dir + ": no such directory");
  if (!fs::exists(out_dir + "/" + checkpoint::kCheckpointDir) &&
      !fs::exists(out_dir + "/" + checkpoint::kCheckpointPrevDir)) {
    if (!IsOutputDir(out_dir)) {
      return Status::Invalid(out_dir +
                             ": no checkpoint/ or checkpoint.prev/ here, and no " +
                             checkpoint::kStartConfig + ": not a crawl output directory");
    }
    return StartAgain(out_dir, overrides, warning, joiner);
  }
  auto lock = LockOut(out_dir, 10);
  if (!lock.ok()) return lock.status();
  auto fail = [&](Status s) {
    ::close(*lock);
    return s;
  };
  bool fell_back = false;
  auto loaded = Select(out_dir, warning, &fell_back);
  if (!loaded.ok()) return fail(loaded.status());
  checkpoint::LoadedCheckpoint& cp = *loaded;
  auto config = engine::LoadConfig(cp.config_path, overrides);
  if (!config.ok()) return fail(config.status());
  uint64_t skip_to = 0;
  st = SelectCommitted(*config, out_dir, joiner, &cp, fell_back, &skip_to);
  if (!st.ok()) return fail(st);
  auto scope = engine::Scope::FromHosts(config->crawl, cp.info.scope_hosts);
  if (!scope.ok()) return fail(scope.status());
  st = Repair(out_dir, cp.info, config->output);
  if (!st.ok()) return fail(st);
  if (config->recrawl.enabled || config->dedup_payload) {
    // The live history is past the checkpoint: its image replaces it (none
    // in a checkpoint of a crawl that did not revisit: an empty history).
    std::error_code ec;
    const std::string live = out_dir + "/" + kHistoryDir;
    fs::remove_all(live, ec);
    if (!cp.history_dir.empty()) st = output::History::Restore(cp.history_dir, live);
    if (!st.ok()) return fail(st);
  }
  if (fell_back) {
    std::error_code ec;
    fs::remove_all(out_dir + "/" + checkpoint::kCheckpointDamagedDir, ec);
    fs::rename(out_dir + "/" + checkpoint::kCheckpointDir,
               out_dir + "/" + checkpoint::kCheckpointDamagedDir, ec);
  }
  auto impl =
      BuildCrawl(*config, out_dir, *lock, std::move(cp.filter), std::move(scope).value(),
                 std::max(cp.info.sequence, skip_to), cp.info.dedup_log_bytes, joiner);
  if (!impl.ok()) return impl.status();
  st = Restore(**impl, cp);
  if (!st.ok()) return st;
  if (fell_back) spdlog::warn("{}", *warning);
  return std::unique_ptr<Crawl>(new Crawl(std::move(impl).value()));
}

}  // namespace crawler::crawl
