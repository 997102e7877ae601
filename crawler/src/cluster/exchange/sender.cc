// See sender.h.
#include "cluster/exchange/sender.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <thread>
#include <utility>

#include "cluster/redis/cluster_wire.h"

namespace crawler::cluster {

using namespace cluster_wire;  // NOLINT: the formats of this module

Sender::Sender(const engine::ClusterConfig& cfg,
               std::function<std::string(const std::string&)> key,
               const std::string& out_dir)
    : key_(std::move(key)),
      node_(cfg.node),
      ram_urls_(cfg.outbox_ram_urls),
      outbox_(cfg.shards, cfg.batch_urls, std::chrono::milliseconds(cfg.batch_ms),
              cfg.max_lag_batches),
      spill_(out_dir + "/cluster-outbox", cfg.shards, cfg.batch_urls) {}

void Sender::Ship(const std::vector<frontier::UrlEntry>& entries,
                  const std::function<uint32_t(std::string_view)>& shard_of) {
  const auto now = Clock::now();
  MutexLock lock(mu_);
  for (const frontier::UrlEntry& e : entries)
    outbox_.Add(shard_of(frontier::HostKey(e.url)), e, now);
}

Status Sender::RestoreOutbox(const std::string& text, const std::string& path,
                             const std::function<uint32_t(std::string_view)>& shard_of) {
  if (text.empty()) return Status::Ok();
  std::vector<frontier::UrlEntry> entries;
  if (text.rfind(kOutboxHeader, 0) != 0 ||
      !ParseLines(std::string_view(text).substr(std::strlen(kOutboxHeader)), &entries)) {
    return Status::Error(Status::Code::kCorruption,
                         path + ": not a cluster outbox (bad header or line)");
  }
  if (!entries.empty())
    spdlog::info("cluster: {} URLs from the checkpoint's outbox queued again",
                 entries.size());
  Ship(entries, shard_of);
  return Status::Ok();
}

Status Sender::RestoreSpill() {
  Result<uint64_t> urls = uint64_t{0};
  {
    MutexLock spill(spill_mu_);
    urls = spill_.Restore();
  }
  if (!urls.ok()) return urls.status();
  if (*urls > 0) {
    MutexLock lock(mu_);
    outbox_.Requeued(*urls);
  }
  return Status::Ok();
}

bool Sender::Quiet() const {
  MutexLock lock(mu_);
  return outbox_.queued_urls() == 0;
}

checkpoint::OutboxCut Sender::Cut(uint64_t sequence) {
  MutexLock spill(spill_mu_);  // no batch is between RAM and a spill file now
  MutexLock lock(mu_);
  checkpoint::OutboxCut out;
  out.text = kOutboxHeader;
  outbox_.AppendCut(&out.text);
  out.spill_files = spill_.Cut(sequence);
  return out;
}

void Sender::Committed(uint64_t sequence) {
  MutexLock spill(spill_mu_);
  spill_.Committed(sequence);
}

void Sender::Report(report::ClusterReport* f) const {
  {
    MutexLock spill(spill_mu_);
    f->urls_on_disk = spill_.urls();
  }
  MutexLock lock(mu_);
  f->urls_queued = outbox_.queued_urls();
  f->urls_held = outbox_.held_urls();
  f->urls_sent = urls_sent_;
  f->batches_sent = batches_sent_;
  f->sends_refused = sends_refused_;
  f->sends_blocked = backoff_.refusing() ? blocked_ : std::string();
}

bool Sender::SendDue(Redis& redis, bool flush_all, bool* did) {
  if (backoff_.Paused(Clock::now())) {
    Hold();  // Redis refused the last sends (full): the due batches wait
    return true;
  }
  if (!RefreshLag(redis)) return false;
  std::vector<OutBatch> due = Select(flush_all);  // in flight: in a cut meanwhile
  SpillIfOver();
  if (due.empty()) return true;
  *did = true;
  // After a refusal, one batch goes as a probe and the rest wait (sender.h).
  std::vector<OutBatch> later;
  if (backoff_.refusing() && due.size() > 1) {
    later.assign(std::make_move_iterator(due.begin() + 1),
                 std::make_move_iterator(due.end()));
    due.resize(1);
  }
  std::vector<std::vector<std::string>> cmds;
  for (const OutBatch& b : due) {
    cmds.push_back({"EVAL", kSendScript, "3", StreamKey(b.shard), key_("sent"),
                    key_("lease:" + std::to_string(b.shard)), Compress(b.lines),
                    std::to_string(b.urls), std::to_string(b.lines.size()), node_,
                    key_("bell:")});
  }
  auto replies = redis.Pipeline(cmds);
  {
    MutexLock lock(mu_);
    outbox_.Sent();
    for (OutBatch& b : later) outbox_.Hold(std::move(b));
    if (!replies.ok()) {
      // Unconfirmed: held for the next connection.
      for (OutBatch& b : due) outbox_.Hold(std::move(b));
      return false;
    }
  }
  Answered(due, *replies);
  return true;
}

void Sender::Answered(std::vector<OutBatch>& due,
                      const std::vector<RedisReply>& replies) {
  // Each reply on its own: a batch Redis refused (full, a replica, ...) is
  // held and sent again after a pause; the others are confirmed.
  MutexLock lock(mu_);
  std::string refusal;
  uint64_t refused = 0;
  for (size_t i = 0; i < due.size(); ++i) {
    OutBatch& b = due[i];
    const RedisReply& r = replies[i];
    if (r.IsError()) {
      if (refusal.empty()) refusal = r.Str();
      ++refused;
      outbox_.Hold(std::move(b));
      continue;
    }
    urls_sent_ += b.urls;
    ++batches_sent_;
    std::optional<uint64_t> stream_lag;
    if (r[1].integer()) stream_lag = r[1].count();
    outbox_.Confirmed(b, stream_lag);
  }
  sends_refused_ += refused;
  if (refused > 0) {
    blocked_ = RefusalOf(refusal);
    if (blocked_.empty()) blocked_ = "an error reply (" + refusal + ")";
    Refused(refusal, refused);
  } else if (auto s = backoff_.Accepted(Clock::now()); s && *s >= 5) {
    spdlog::info("redis: takes batches again after {:.1f} s ({} sends refused in all)",
                 *s, sends_refused_);
  }
}

void Sender::Refused(const std::string& error, uint64_t batches) {
  if (!backoff_.Refused(Clock::now())) return;
  std::string why = RefusalOf(error);
  spdlog::warn(
      "redis: sends refused: {}; {} batches for other nodes wait here (RAM, then "
      "spill files) and are sent again with back-off (one as a probe), while "
      "heartbeats, reads, commits, acknowledgements and trims go on where Redis takes "
      "them ({} sends refused in all)",
      why.empty() ? "an error reply (" + error + ")" : "Redis is " + why, batches,
      sends_refused_);
}

void Sender::Hold() {
  {
    MutexLock lock(mu_);
    outbox_.HoldDue(Clock::now());
  }
  SpillIfOver();
}

void Sender::HoldFor(std::chrono::milliseconds wait, const std::atomic<bool>& stop) {
  for (auto slept = std::chrono::milliseconds(0); slept < wait && !stop.load();
       slept += std::chrono::milliseconds(100)) {
    Hold();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::vector<OutBatch> Sender::Select(bool flush_all) {
  // spill_mu_ throughout: a batch read back from a file is in flight in the
  // outbox before a checkpoint can be cut (Cut takes spill_mu_ first).
  MutexLock spill(spill_mu_);
  std::vector<OutBatch> due;
  std::vector<std::pair<uint32_t, uint64_t>> from_disk;  // shard, batches
  {
    MutexLock lock(mu_);
    due = outbox_.Select(flush_all, Clock::now());
    for (uint32_t shard : spill_.Shards()) {
      const uint64_t room = outbox_.SpillRoom(shard);
      if (room > 0) from_disk.emplace_back(shard, room);
    }
  }
  if (from_disk.empty()) return due;
  std::vector<OutBatch> read;
  for (auto [shard, max] : from_disk) {
    for (OutBatch& b : spill_.Read(shard, max)) read.push_back(std::move(b));
  }
  MutexLock lock(mu_);
  for (OutBatch& b : read) {
    outbox_.Sending(b);
    due.push_back(std::move(b));
  }
  return due;
}

void Sender::SpillIfOver() {
  {
    MutexLock lock(mu_);
    if (outbox_.held_urls() <= ram_urls_) return;
  }
  MutexLock spill(spill_mu_);
  std::map<uint32_t, std::deque<OutBatch>> out;
  {
    MutexLock lock(mu_);
    out = outbox_.TakeHeld();
  }
  uint64_t urls = 0, files = 0;
  for (auto& [shard, q] : out) {
    Status st = spill_.Write(shard, q);
    if (!st.ok()) {
      // Disk full or gone: the batches stay in RAM (nothing is lost; memory
      // grows until the disk or Redis is back).
      spdlog::error("cluster: cannot spill the outbox: {}", st.message());
      MutexLock lock(mu_);
      for (OutBatch& b : q) outbox_.Hold(std::move(b));
      continue;
    }
    for (const OutBatch& b : q) urls += b.urls;
    ++files;
  }
  if (files > 0)
    spdlog::info("cluster: {} held URLs spilled to {} files in {} (over {} in RAM)", urls,
                 files, spill_.dir(), ram_urls_);
}

bool Sender::RefreshLag(Redis& redis) {
  auto now = Clock::now();
  if (now - last_lag_ < std::chrono::milliseconds(100)) return true;
  last_lag_ = now;
  std::vector<uint32_t> shards;
  {
    MutexLock spill(spill_mu_);
    MutexLock lock(mu_);
    shards = outbox_.HeldShards();
    for (uint32_t shard : spill_.Shards()) shards.push_back(shard);
  }
  if (shards.empty()) return true;
  std::sort(shards.begin(), shards.end());
  shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
  std::vector<std::string> cmd = {"EVAL", kLagScript, std::to_string(shards.size())};
  for (uint32_t s : shards) cmd.push_back(StreamKey(s));
  auto r = redis.Command(cmd);
  if (!r.ok()) return false;
  MutexLock lock(mu_);
  for (size_t i = 0; i < shards.size(); ++i) {
    if ((*r)[i].integer()) outbox_.SetLag(shards[i], (*r)[i].count());
  }
  return true;
}

}  // namespace crawler::cluster
