// See shard_loads.h.
#include "cluster/membership/shard_loads.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "base/file_util.h"
#include "cluster/redis/cluster_wire.h"
#include "crawler/checkpoint.h"
#include "engine/host_table.h"

namespace crawler::cluster {

using namespace cluster_wire;  // NOLINT: the formats this file reads

Gain OnGained(uint32_t shard, const LeaseReply& reply, const std::string& node,
              bool takeover, bool released, const ResumedFrom* resumed) {
  // A shard this node gave up (handoff) and takes back is loaded from that
  // checkpoint too: its queue was dropped here, and a checkpoint cut since
  // does not hold it, even if it still lists some of its hosts (the chaos
  // test lost 553 URLs when a node killed between handoff and takeover came
  // back and took its released shards as empty ones).
  const std::string from = reply.source.substr(0, reply.source.find(' '));
  // This node resumed from checkpoint.prev/ because its newest committed one
  // was damaged (crawl/resume.cc): a source naming that one is restored
  // from what it resumed from, as a taker would load it (ReadShards).
  const bool own_damaged =
      resumed != nullptr && from == node && !released &&
      std::strtoull(reply.source.c_str() + from.size(), nullptr, 10) > resumed->sequence;
  const bool resumed_here =
      own_damaged ||
      (resumed != nullptr &&
       reply.source == node + " " + std::to_string(resumed->sequence) &&
       std::binary_search(resumed->shards.begin(), resumed->shards.end(), shard));
  // The damaged checkpoint was the first of this node's to hold the shard:
  // the one it resumed from lacks it. Loaded from where it came from.
  const bool from_prev = own_damaged && takeover && !reply.source_prev.empty();
  Gain g;
  if (from_prev) {
    g.action = Gain::Action::kLoad;
    g.source = reply.source_prev;
  } else if (takeover && !reply.source.empty() &&
             (from != node || released || !resumed_here)) {
    // Should the source be damaged, and the checkpoint before it lack the
    // shard, it is loaded from source_prev instead (LoadElsewhere).
    g.action = Gain::Action::kLoad;
    g.source = reply.source;
    g.prev = reply.source_prev;
  } else if (resumed_here) {
    g.action = Gain::Action::kRestoreOwn;
  }
  return g;
}

ShardLoads::~ShardLoads() {
  if (running_.valid()) running_.wait();
}

void ShardLoads::Want(uint32_t shard, const std::string& source,
                      const std::string& prev) {
  wanted_[shard] = source;
  if (prev.empty()) {
    prev_.erase(shard);
  } else {
    prev_[shard] = prev;
  }
}

std::optional<ShardLoads::Finished> ShardLoads::Step(
    const DirOf& dir_of, const std::function<bool(uint32_t)>& skip,
    Clock::time_point now) {
  if (running_.valid()) {
    // A load runs on its own thread: heartbeats and lease renewals keep
    // their period meanwhile (a big shard took seconds on this thread).
    if (running_.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
      return std::nullopt;
    Running done = running_.get();
    return Ended(std::move(done.load), std::move(done.result), done.start, now);
  }
  if (wanted_.empty() || Waiting() || now < retry_at_) return std::nullopt;
  // One source at a time; the rest at the next rounds.
  std::string source;
  ShardLoad load;
  for (const auto& [s, src] : wanted_) {
    if (skip(s)) continue;
    if (source.empty()) source = src;
    if (src == source) load.shards.push_back(s);
  }
  if (load.shards.empty()) return std::nullopt;
  load.node = source.substr(0, source.find(' '));
  const std::string seq = source.substr(source.find(' ') + 1);
  std::from_chars(seq.data(), seq.data() + seq.size(), load.sequence);
  auto dir = dir_of(load.node);
  if (!dir.ok()) return Ended(std::move(load), dir.status(), now, now);
  load.dir = std::move(dir).value();
  if (LoadElsewhere(load)) return std::nullopt;  // at the next rounds
  running_ = std::async(std::launch::async,
                        [reader = reader_, load = std::move(load), now]() mutable {
                          Running r{std::move(load), now};
                          r.result = reader(r.load);
                          return r;
                        });
  return std::nullopt;
}

bool ShardLoads::LoadElsewhere(const ShardLoad& load) {
  std::vector<uint32_t> moved;
  for (uint32_t s : load.shards)
    if (prev_.count(s) > 0) moved.push_back(s);
  if (moved.empty() || !CheckpointOfSequence(load.dir, load.sequence).empty()) {
    for (uint32_t s : moved) prev_.erase(s);
    return false;
  }
  // The source is damaged, and the checkpoint before it on its node's disk
  // (what ReadShards falls back to) lacks these shards: they came to that
  // node after it. They are loaded from where they came from; Redis still
  // keeps every entry since (acknowledged only once a checkpoint.prev holds
  // them).
  for (uint32_t s : moved) {
    spdlog::warn(
        "cluster: node {}'s checkpoint {} is damaged and the one before lacks shard {}: "
        "it is loaded from checkpoint '{}', where that node got it from",
        load.node, load.sequence, s, prev_[s]);
    wanted_[s] = prev_[s];
    prev_.erase(s);
  }
  return true;
}

std::optional<ShardLoads::Finished> ShardLoads::Ended(ShardLoad load,
                                                      Result<engine::ShardState> result,
                                                      Clock::time_point start,
                                                      Clock::time_point now) {
  if (!result.ok()) {
    spdlog::error(
        "cluster: cannot take over {} shards from node {} checkpoint {}: {}; trying "
        "again",
        load.shards.size(), load.node, load.sequence, result.status().message());
    retry_at_ = now + std::chrono::seconds(2);
    return std::nullopt;
  }
  const engine::ShardState& st = *result;
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  Finished out{
      load.shards, load.node + " " + std::to_string(st.sequence), seconds,
      st.frontier.urls.size(),
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
          .count()};
  for (uint32_t s : load.shards) {
    wanted_.erase(s);
    prev_.erase(s);
  }
  spdlog::info(
      "cluster: loaded {} shards from {} in {:.3f} s: {} hosts, {} URLs queued, {} "
      "seen, {} outbox URLs to send again, {} URL history records",
      load.shards.size(), st.from, seconds, st.frontier.hosts.size(),
      st.frontier.urls.size(), st.seen.size(), st.outbox.size(), st.history.size());
  Put(std::move(result).value());
  return out;
}

void ShardLoads::Put(engine::ShardState state) {
  MutexLock lock(mu_);
  state_ = std::move(state);
  waiting_ = true;
}

std::optional<engine::ShardState> ShardLoads::Take() {
  if (!waiting_.load()) return std::nullopt;
  MutexLock lock(mu_);
  std::optional<engine::ShardState> out;
  out.swap(state_);
  waiting_ = false;
  return out;
}

std::string CheckpointOfSequence(const std::string& out, uint64_t sequence) {
  const std::string handoff = std::string(kHandoffDir) + "/" + std::to_string(sequence);
  // handoff/SEQ/ first: it never changes, while a live node's checkpoint/
  // and checkpoint.prev/ rotate at its next cut (a taker reading one then
  // saw a checksum mismatch, and tried again).
  for (const std::string& name : {handoff, std::string(checkpoint::kCheckpointDir),
                                  std::string(checkpoint::kCheckpointPrevDir)}) {
    auto m = checkpoint::ReadManifest(out + "/" + name);
    if (m.ok() && m->contains("sequence") &&
        m->at("sequence").to_number<uint64_t>() == sequence)
      return out + "/" + name;
  }
  return "";
}

std::string OlderThanDamaged(const std::string& out, uint64_t sequence) {
  std::error_code ec;
  const bool damaged =
      std::filesystem::exists(out + "/" + checkpoint::kCheckpointDamagedDir, ec) ||
      (std::filesystem::exists(out + "/" + checkpoint::kCheckpointDir + "/MANIFEST.json",
                               ec) &&
       !checkpoint::ReadManifest(out + "/" + checkpoint::kCheckpointDir).ok());
  if (!damaged) return "";
  std::string best;
  uint64_t best_sequence = 0;
  for (const char* name : {checkpoint::kCheckpointDir, checkpoint::kCheckpointPrevDir}) {
    auto m = checkpoint::ReadManifest(out + "/" + name);
    if (!m.ok() || !m->contains("sequence")) continue;
    const uint64_t seq = m->at("sequence").to_number<uint64_t>();
    if (seq < sequence && seq > best_sequence) {
      best = out + "/" + name;
      best_sequence = seq;
    }
  }
  return best;
}

namespace {

// A source node's links for other shards not yet in Redis at its cut
// (checkpoint `found` of the node whose OUT is `dir`): its outbox.txt
// (`text`) and its spill files (a torn last line was written after the cut).
Status ReadSourceOutbox(const std::string& dir, const std::string& found,
                        const std::string& text, std::vector<frontier::UrlEntry>* out) {
  if (!text.empty() &&
      (text.rfind(kOutboxHeader, 0) != 0 ||
       !ParseLines(std::string_view(text).substr(std::strlen(kOutboxHeader)), out)))
    return Status::Error(Status::Code::kCorruption, found + "/outbox.txt: malformed");
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/cluster-outbox", ec)) {
    if (e.path().extension() != ".txt") continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::string spill((std::istreambuf_iterator<char>(in)),
                      std::istreambuf_iterator<char>());
    if (in.bad()) return IoError(e.path().string(), "read");
    std::string_view whole(spill);
    whole = whole.substr(0, whole.rfind('\n') + 1);
    if (!ParseLines(whole, out))
      return Status::Error(Status::Code::kCorruption, e.path().string() + ": malformed");
  }
  return Status::Ok();
}

}  // namespace

std::vector<frontier::UrlEntry> SendAgainFrom(
    std::vector<frontier::UrlEntry> outbox, const std::set<uint32_t>& held,
    const std::set<uint32_t>& want,
    const std::function<uint32_t(std::string_view)>& shard_of) {
  std::vector<frontier::UrlEntry> out;
  for (frontier::UrlEntry& e : outbox) {
    bool send = true;
    if (!e.referrer.empty()) {
      const uint32_t from = shard_of(frontier::HostKey(e.referrer));
      send = held.count(from) == 0 || want.count(from) > 0;
    }
    if (send) out.push_back(std::move(e));
  }
  return out;
}

namespace {

// The test hook of ReadShards (shard_loads.h).
void SlowLoadForTests(const std::string& self) {
  const char* hook = std::getenv("CRAWLER_TEST_TAKEOVER_LOAD_MS");
  if (hook == nullptr) return;
  std::string_view h(hook);
  std::string_view who = h.substr(0, h.find(':'));
  if ((who == self || who == "*") && h.find(':') != std::string_view::npos)
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::atoi(hook + h.find(':') + 1)));
}

// The checkpoint of `load`'s sequence, or the one before a damaged one.
Result<std::string> FindSource(const ShardLoad& load) {
  // checkpoint/, or checkpoint.prev/ when a newer one was published but not
  // committed, or handoff/SEQ/ (a live node handed the shards over in it,
  // and cut on).
  std::string found = CheckpointOfSequence(load.dir, load.sequence);
  if (found.empty()) {
    // Damaged (its node resumed from the one before, or will): the one
    // before holds every stream entry Redis no longer keeps (inbox.h); the
    // pages fetched since are fetched again.
    found = OlderThanDamaged(load.dir, load.sequence);
    if (!found.empty())
      spdlog::warn(
          "cluster: node {}'s checkpoint {} is damaged: its shards are loaded from {}, "
          "the one before; their pages fetched since are fetched again",
          load.node, load.sequence, found);
  }
  if (found.empty())
    return Status::Error(Status::Code::kIoError,
                         load.dir + ": no checkpoint " + std::to_string(load.sequence) +
                             " in checkpoint/, checkpoint.prev/ or " + kHandoffDir + "/" +
                             std::to_string(load.sequence) + "/");
  return found;
}

}  // namespace

Result<engine::ShardState> ReadShards(
    const ShardLoad& load, const std::function<uint32_t(std::string_view)>& shard_of,
    const std::string& history_import, const std::string& self) {
  SlowLoadForTests(self);  // a big shard, a slow disk
  auto found = FindSource(load);
  if (!found.ok()) return found.status();
  auto cp = checkpoint::LoadCheckpoint(*found, /*with_filter=*/false);
  if (!cp.ok()) return cp.status();
  // Selected by host below, and the node's directory is not ours to keep.
  Status read = cp->frontier.ReadSpills();
  if (!read.ok()) return read;
  std::set<uint32_t> want(load.shards.begin(), load.shards.end());
  auto mine = [&](std::string_view host) { return want.count(shard_of(host)) > 0; };
  // The shards the source held with URLs queued at the cut (its outbox, below).
  std::set<uint32_t> held;
  engine::ShardState st;
  st.shards = load.shards;
  st.from = "node " + load.node + " checkpoint " + std::to_string(cp->info.sequence);
  st.sequence = cp->info.sequence;
  for (frontier::HostImage& h : cp->frontier.hosts)
    if (mine(h.key)) st.frontier.hosts.push_back(std::move(h));
  for (auto& u : cp->frontier.urls) {
    const uint32_t shard = shard_of(frontier::HostKey(u.first.url));
    held.insert(shard);
    if (want.count(shard) > 0) st.frontier.urls.push_back(std::move(u));
  }
  auto hosts = engine::HostTable::Decode(cp->hosts_bin, *found + "/hosts.bin");
  if (!hosts.ok()) return hosts.status();
  for (engine::HostSnapshot& h : *hosts)
    if (mine(h.key)) st.hosts.push_back(std::move(h));
  auto domains = engine::HostTable::DecodeDomains(cp->hosts_bin, *found + "/hosts.bin");
  if (!domains.ok()) return domains.status();
  st.domains = std::move(domains).value();
  auto seen = output::SeenLog::Read(load.dir + "/seen.log", cp->info.seen_log_bytes,
                                    [&](uint32_t s) { return want.count(s) > 0; });
  if (!seen.ok()) return seen.status();
  st.seen = std::move(seen).value();
  if (!cp->history_dir.empty()) {
    // [recrawl]: the shards' URL history moves with them (read now: the
    // source's checkpoint/ may rotate before a worker restores it).
    auto history = output::History::ReadImage(
        cp->history_dir, history_import,
        [&](std::string_view url) { return mine(frontier::HostKey(url)); });
    if (!history.ok()) return history.status();
    st.history = std::move(history).value();
  }
  std::vector<frontier::UrlEntry> outbox;
  Status read_outbox = ReadSourceOutbox(load.dir, *found, cp->outbox, &outbox);
  if (!read_outbox.ok()) return read_outbox;
  st.outbox = SendAgainFrom(std::move(outbox), held, want, shard_of);
  return st;
}

}  // namespace crawler::cluster
