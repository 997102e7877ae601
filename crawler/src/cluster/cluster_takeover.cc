// Death and leave of cluster nodes (see cluster.h): the shards a node wants,
// the fenced commit of its checkpoints, loading a dead or leaving node's
// shards from its last committed checkpoint, and giving leases up.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "base/file_util.h"
#include "cluster/cluster.h"
#include "cluster/cluster_wire.h"
#include "crawler/checkpoint.h"

namespace crawler::engine {

using namespace cluster_wire;  // NOLINT: the formats this file speaks

void Cluster::Want(const std::vector<std::string>& live) {
  std::set<uint32_t> want;
  for (uint32_t s : my_shards_) {
    if (leases_.Holds(s)) want.insert(s);
  }
  if (std::find(live.begin(), live.end(), cfg_.node) != live.end()) {
    for (uint32_t s = 0; s < cfg_.shards; ++s) {
      const std::string& owner = owners_.OwnerOf(live, s);
      if (owner == cfg_.node) want.insert(s);
      // Held here, loaded, another live node's now (it joined, or came
      // back): handed over (or, if that node went away meanwhile, kept).
      if (want.count(s) > 0 && to_load_.count(s) == 0 &&
          (ready_[s].load() || handing_[s].load()))
        HandTo(s, owner);
    }
  }
  // Shards being loaded stay asked for (their lease is renewed meanwhile).
  for (const auto& [s, source] : to_load_) want.insert(s);
  my_shards_.assign(want.begin(), want.end());
  std::set<uint32_t> unheld;
  bool more = false;
  for (uint32_t s : want)
    if (!leases_.Holds(s) && to_load_.count(s) == 0) {
      unheld.insert(s);
      more |= unheld_.count(s) == 0;
    }
  if (more) eager_until_ = SteadyClock::now() + 2 * leases_.ttl();
  if (unheld.empty()) eager_until_ = {};
  unheld_ = std::move(unheld);
}

void Cluster::Fail(const std::string& why) {
  Fail(Status::Error(Status::Code::kIoError, "cluster: " + why));
}

void Cluster::Fail(const Status& failure) {
  spdlog::error("{}", failure.message());
  MutexLock lock(mu_);
  if (failed_.exchange(true)) return;
  failure_ = failure;
}

Status Cluster::failure() const {
  MutexLock lock(mu_);
  return failure_;
}

std::optional<ShardState> Cluster::TakeShardState() {
  if (!has_loaded_.load()) return std::nullopt;
  MutexLock lock(mu_);
  std::optional<ShardState> out;
  out.swap(loaded_);
  has_loaded_ = false;
  return out;
}

void Cluster::ShardsLoaded(const std::vector<uint32_t>& shards) {
  MutexLock lock(mu_);
  for (uint32_t s : shards) {
    ready_[s] = true;
    to_claim_.push_back(s);
    transfers_.TakenBack(s);  // given up once, taken back: this node's again
  }
}

std::string CheckpointOfSequence(const std::string& out, uint64_t sequence) {
  const std::string handoff = std::string(kHandoffDir) + "/" + std::to_string(sequence);
  // handoff/SEQ/ first: it never changes, while a live node's checkpoint/
  // and checkpoint.prev/ rotate at its next cut (a taker reading one then
  // saw a checksum mismatch, and tried again).
  for (const std::string& name :
       {handoff, std::string(kCheckpointDir), std::string(kCheckpointPrevDir)}) {
    auto m = ReadManifest(out + "/" + name);
    if (m.ok() && m->contains("sequence") &&
        m->at("sequence").to_number<uint64_t>() == sequence)
      return out + "/" + name;
  }
  return "";
}

std::string OlderThanDamaged(const std::string& out, uint64_t sequence) {
  std::error_code ec;
  const bool damaged =
      std::filesystem::exists(out + "/" + kCheckpointDamagedDir, ec) ||
      (std::filesystem::exists(out + "/" + kCheckpointDir + "/MANIFEST.json", ec) &&
       !ReadManifest(out + "/" + kCheckpointDir).ok());
  if (!damaged) return "";
  std::string best;
  uint64_t best_sequence = 0;
  for (const char* name : {kCheckpointDir, kCheckpointPrevDir}) {
    auto m = ReadManifest(out + "/" + name);
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

Result<std::string> Cluster::OutDirOf(const std::string& node) {
  auto rel = redis_->Command({"HGET", Key("outdirs"), node});
  if (!rel.ok()) return rel.status();
  if (rel->raw() == nullptr || rel->raw()->type != REDIS_REPLY_STRING)
    return Status::Error(Status::Code::kIoError,
                         "node '" + node + "' published no output directory");
  return cfg_.shared_dir + "/" + rel->Str();
}

Result<ShardState> Cluster::LoadFrom(const std::string& dir, const std::string& node,
                                     uint64_t sequence,
                                     const std::vector<uint32_t>& shards) const {
  // Test hook, "NODE:MS" ("*": every node): that node's loads are slow (a
  // big shard, a slow disk), so a test can hold open the window between
  // taking a shard and having it here.
  if (const char* hook = std::getenv("CRAWLER_TEST_TAKEOVER_LOAD_MS"); hook != nullptr) {
    std::string_view h(hook);
    std::string_view who = h.substr(0, h.find(':'));
    if ((who == cfg_.node || who == "*") && h.find(':') != std::string_view::npos)
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::atoi(hook + h.find(':') + 1)));
  }
  // The checkpoint of that sequence: checkpoint/, or checkpoint.prev/ when a
  // newer one was published but not committed, or handoff/SEQ/ (a live node
  // handed the shards over in it, and cut on).
  std::string found = CheckpointOfSequence(dir, sequence);
  if (found.empty()) {
    // Damaged (its node resumed from the one before, or will): the one
    // before holds every stream entry Redis no longer keeps (inbox.h); the
    // pages fetched since are fetched again.
    found = OlderThanDamaged(dir, sequence);
    if (!found.empty())
      spdlog::warn(
          "cluster: node {}'s checkpoint {} is damaged: its shards are loaded from {}, "
          "the one before; their pages fetched since are fetched again",
          node, sequence, found);
  }
  if (found.empty())
    return Status::Error(Status::Code::kIoError,
                         dir + ": no checkpoint " + std::to_string(sequence) +
                             " in checkpoint/, checkpoint.prev/ or " + kHandoffDir + "/" +
                             std::to_string(sequence) + "/");
  auto cp = LoadCheckpoint(found, /*with_filter=*/false);
  if (!cp.ok()) return cp.status();
  // Selected by host below, and the node's directory is not ours to keep.
  Status read = cp->frontier.ReadSpills();
  if (!read.ok()) return read;
  std::set<uint32_t> want(shards.begin(), shards.end());
  auto mine = [&](std::string_view host) { return want.count(ShardOf(host)) > 0; };
  ShardState st;
  st.shards = shards;
  st.from = "node " + node + " checkpoint " + std::to_string(cp->info.sequence);
  st.sequence = cp->info.sequence;
  for (frontier::HostImage& h : cp->frontier.hosts)
    if (mine(h.key)) st.frontier.hosts.push_back(std::move(h));
  for (auto& u : cp->frontier.urls)
    if (mine(frontier::HostKey(u.first.url))) st.frontier.urls.push_back(std::move(u));
  auto hosts = HostTable::Decode(cp->hosts_bin, found + "/hosts.bin");
  if (!hosts.ok()) return hosts.status();
  for (HostSnapshot& h : *hosts)
    if (mine(h.key)) st.hosts.push_back(std::move(h));
  auto seen = SeenLog::Read(dir + "/seen.log", cp->info.seen_log_bytes,
                            [&](uint32_t s) { return want.count(s) > 0; });
  if (!seen.ok()) return seen.status();
  st.seen = std::move(seen).value();
  if (!cp->history_dir.empty()) {
    // [recrawl]: the shards' URL history moves with them (read now: the
    // source's checkpoint/ may rotate before a worker restores it).
    auto history = History::ReadImage(
        cp->history_dir, out_dir_ + "/history.import",
        [&](std::string_view url) { return mine(frontier::HostKey(url)); });
    if (!history.ok()) return history.status();
    st.history = std::move(history).value();
  }
  Status outbox = ReadSourceOutbox(dir, found, cp->outbox, &st.outbox);
  if (!outbox.ok()) return outbox;
  return st;
}

void Cluster::LoadTaken() {
  if (loading_.valid()) {
    // A load runs on its own thread: heartbeats and lease renewals keep
    // their period meanwhile (a big shard took seconds on this thread).
    if (loading_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
    Loaded(loading_.get());
    return;
  }
  if (to_load_.empty() || has_loaded_.load()) return;
  auto now = SteadyClock::now();
  // After a failed load, the next try waits 2 s (the source may appear).
  if (now < retry_load_at_) return;
  // One source at a time; the rest at the next rounds. A shard this node
  // gave up and took back waits until a worker has dropped what it had.
  std::string source;
  std::vector<uint32_t> shards;
  {
    MutexLock lock(mu_);
    for (const auto& [s, src] : to_load_) {
      if (transfers_.Dropping(s)) continue;
      if (source.empty()) source = src;
      if (src == source) shards.push_back(s);
    }
  }
  if (shards.empty()) return;
  std::string node = source.substr(0, source.find(' '));
  uint64_t sequence = 0;
  std::string seq_text = source.substr(source.find(' ') + 1);
  std::from_chars(seq_text.data(), seq_text.data() + seq_text.size(), sequence);
  Load load;
  load.node = node;
  load.sequence = sequence;
  load.shards = shards;
  load.start = SteadyClock::now();
  auto dir = OutDirOf(node);
  if (!dir.ok()) {
    load.result = dir.status();
    Loaded(std::move(load));
    return;
  }
  if (LoadElsewhere(*dir, load)) return;  // at the next rounds
  loading_ = std::async(std::launch::async, [this, load = std::move(load),
                                             dir = std::move(dir).value()]() mutable {
    load.result = LoadFrom(dir, load.node, load.sequence, load.shards);
    return std::move(load);
  });
}

bool Cluster::LoadElsewhere(const std::string& dir, const Load& load) {
  std::vector<uint32_t> moved;
  for (uint32_t s : load.shards)
    if (load_prev_.count(s) > 0) moved.push_back(s);
  if (moved.empty() || !CheckpointOfSequence(dir, load.sequence).empty()) {
    for (uint32_t s : moved) load_prev_.erase(s);
    return false;
  }
  // The source is damaged, and the checkpoint before it on its node's disk
  // (what LoadFrom falls back to) lacks these shards: they came to that node
  // after it. They are loaded from where they came from; Redis still keeps
  // every entry since (acknowledged only once a checkpoint.prev holds them).
  for (uint32_t s : moved) {
    spdlog::warn(
        "cluster: node {}'s checkpoint {} is damaged and the one before lacks shard {}: "
        "it is loaded from checkpoint '{}', where that node got it from",
        load.node, load.sequence, s, load_prev_[s]);
    to_load_[s] = load_prev_[s];
    load_prev_.erase(s);
  }
  return true;
}

void Cluster::Loaded(Load load) {
  if (!load.result.ok()) {
    spdlog::error(
        "cluster: cannot take over {} shards from node {} checkpoint {}: {}; trying "
        "again",
        load.shards.size(), load.node, load.sequence, load.result.status().message());
    retry_load_at_ = SteadyClock::now() + std::chrono::seconds(2);
    return;
  }
  const ShardState& st = *load.result;
  for (uint32_t s : load.shards) {
    to_load_.erase(s);
    load_prev_.erase(s);
    state_from_[s] = load.node + " " + std::to_string(st.sequence);
  }
  spdlog::info(
      "cluster: loaded {} shards from {} in {:.3f} s: {} hosts, {} URLs queued, {} "
      "seen, {} outbox URLs to send again, {} URL history records",
      load.shards.size(), st.from,
      std::chrono::duration<double>(SteadyClock::now() - load.start).count(),
      st.frontier.hosts.size(), st.frontier.urls.size(), st.seen.size(), st.outbox.size(),
      st.history.size());
  MutexLock lock(mu_);
  loaded_ = std::move(load.result).value();
  has_loaded_ = true;
}

bool Cluster::ClaimLoaded(bool* did) {
  std::vector<uint32_t> shards;
  {
    MutexLock lock(mu_);
    shards.swap(to_claim_);
  }
  std::sort(shards.begin(), shards.end());  // queued more than once: claimed once
  shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
  // Every entry still pending in their streams (the dead node's included)
  // becomes this node's, then is read like a resumed node's own: a chunk a
  // round (Receive), from the first.
  for (uint32_t s : shards) {
    std::string cursor = "0-0";
    do {
      auto r = redis_->Command({"XAUTOCLAIM", StreamKey(s), "owners", cfg_.node, "0",
                                cursor, "COUNT", "10000", "JUSTID"});
      if (!r.ok()) {
        MutexLock lock(mu_);
        to_claim_.insert(to_claim_.end(), shards.begin(), shards.end());
        return false;
      }
      if (r->IsError()) {
        spdlog::warn("redis: claim of shard {}: {}", s, r->Str());
        break;
      }
      cursor = RedisReply::StrOf(Element(r->raw(), 0));
    } while (cursor != "0-0" && !cursor.empty());
  }
  std::vector<uint32_t> reading;
  {
    MutexLock lock(mu_);
    for (uint32_t s : shards) pending_from_[s] = "0";
    for (const auto& [s, from] : pending_from_) reading.push_back(s);
  }
  if (reading.empty()) return true;
  // A failed read keeps each shard's place in pending_from_: tried again.
  return Receive(/*pending=*/true, did, &reading);
}

bool Cluster::Commit() {
  // A node that lost shards to another (Fail) commits nothing more: a
  // checkpoint cut after ApplyLeases dropped the lost shards from holding_
  // would name none of them, pass the fence, and become what --resume
  // starts from, with pages the new owners fetch again (an ASan run of the
  // zombie test found 4 URLs twice that way).
  if (failed_.load()) return true;
  // Leases of shards handed over are given up before any later checkpoint
  // (which no longer holds them) is committed: Redis never shows this node
  // holding a shard its committed checkpoint lacks.
  if (!SendReleases()) return false;
  uint64_t sequence = 0;
  std::vector<std::pair<uint32_t, uint64_t>> shards;
  {
    MutexLock lock(mu_);
    if (published_ <= committed_) return true;
    sequence = published_;
    auto it = cut_shards_.find(sequence);
    if (it != cut_shards_.end()) shards = it->second;
  }
  std::vector<std::string> cmd = {"EVAL",
                                  kCommitScript,
                                  "4",
                                  Key("holder"),
                                  Key("source"),
                                  Key("commits"),
                                  Key("source_prev"),
                                  cfg_.node,
                                  std::to_string(sequence)};
  const std::set<uint32_t> before = ShardsOfCheckpointBefore(sequence);
  for (const auto& [shard, epoch] : shards) {
    cmd.push_back(std::to_string(shard) + " " + std::to_string(epoch));
    auto from = state_from_.find(shard);
    if (before.count(shard) == 0 && from != state_from_.end())
      cmd.back() += " " + from->second;
  }
  auto r = redis_->Command(cmd);
  if (!r.ok()) return false;
  if (ReplyFailed(*r, "commit")) return false;
  if (RedisReply::StrOf(Element(r->raw(), 0)) == "fenced") {
    {
      MutexLock lock(mu_);
      ++figures_.acks_fenced;
    }
    fenced_ = true;
    Fail("the commit of checkpoint " + std::to_string(sequence) +
         " was refused by Redis (fenced): shard " +
         RedisReply::StrOf(Element(r->raw(), 1)) + " is now '" +
         RedisReply::StrOf(Element(r->raw(), 2)) +
         "'; this node's work since its last committed checkpoint (" +
         std::to_string(committed_) + ") is void");
    committed_ = sequence;  // not again
    return true;
  }
  committed_ = sequence;
  last_committed_shards_.clear();
  for (const auto& [shard, epoch] : shards) {
    last_committed_shards_.insert(shard);
    if (before.count(shard) > 0) state_from_.erase(shard);
  }
  AfterCommit(sequence);
  return true;
}

std::set<uint32_t> Cluster::ShardsOfCheckpointBefore(uint64_t sequence) {
  // Published and not committed (a commit failed or came late), else the
  // last committed one: checkpoint.prev/ once `sequence` is checkpoint/.
  MutexLock lock(mu_);
  auto it = cut_shards_.lower_bound(sequence);
  if (it == cut_shards_.begin()) return last_committed_shards_;
  --it;
  std::set<uint32_t> out;
  for (const auto& [shard, epoch] : it->second) out.insert(shard);
  return out;
}

bool Cluster::Release() {
  if (failed_.load()) return true;
  {
    MutexLock lock(mu_);
    if (published_ > committed_) {
      spdlog::warn(
          "cluster: checkpoint {} is not committed; the leases are kept (they expire)",
          published_);
      return true;
    }
  }
  std::vector<std::string> cmd = {"EVAL", kReleaseScript, "0"};
  std::vector<std::string> values;
  for (uint32_t s : my_shards_) {
    if (!leases_.Holds(s)) continue;
    cmd.push_back(Key("lease:" + std::to_string(s)));
    values.push_back(leases_.Token(s));
  }
  cmd[2] = std::to_string(values.size());
  cmd.insert(cmd.end(), values.begin(), values.end());
  auto r = redis_->Pipeline({cmd, {"DEL", Key("alive:" + cfg_.node)}});
  if (!r.ok() || (*r)[0].IsError()) return false;
  spdlog::info("cluster: left job {}: {} leases given up (last commit: checkpoint {})",
               cfg_.job, (*r)[0].Int(), committed_);
  return true;
}

}  // namespace crawler::engine
