// See receiver.h.
#include "cluster/exchange/receiver.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include "cluster/redis/cluster_wire.h"

namespace crawler::cluster {

using namespace cluster_wire;  // NOLINT: the formats this file speaks

Receiver::Receiver(const engine::ClusterConfig& cfg,
                   std::function<std::string(const std::string&)> key, ReplyFailed failed)
    : key_(std::move(key)),
      failed_(std::move(failed)),
      node_(cfg.node),
      // An idle node looks at its bell down to every max(batch_ms, 50) ms,
      // and reads at least every 5 s.
      bell_(std::chrono::milliseconds(std::max<uint32_t>(cfg.batch_ms, 50)),
            std::chrono::seconds(5)) {}

std::vector<frontier::UrlEntry> Receiver::Take() {
  MutexLock lock(mu_);
  std::vector<frontier::UrlEntry> out = inbox_.Take();
  urls_received_ += out.size();
  return out;
}

void Receiver::Admitted() {
  MutexLock lock(mu_);
  inbox_.Admitted();
}

bool Receiver::Empty() const {
  MutexLock lock(mu_);
  return inbox_.Empty();
}

bool Receiver::Quiet() const {
  MutexLock lock(mu_);
  return inbox_.Quiet() && to_claim_.empty() && pending_from_.empty();
}

void Receiver::Cut(uint64_t sequence) {
  MutexLock lock(mu_);
  inbox_.Cut(sequence);
}

void Receiver::Committed(uint64_t sequence, bool last) {
  MutexLock lock(mu_);
  inbox_.Committed(sequence, last);
}

uint64_t Receiver::committed() const {
  MutexLock lock(mu_);
  return inbox_.committed();
}

bool Receiver::AwaitingCut() const {
  MutexLock lock(mu_);
  return inbox_.AwaitingCut();
}

std::vector<StreamEntry> Receiver::TakeAcks() {
  MutexLock lock(mu_);
  return inbox_.TakeAcks();
}

void Receiver::Retry(std::vector<StreamEntry> entries) {
  MutexLock lock(mu_);
  inbox_.Retry(std::move(entries));
}

void Receiver::Claim(uint32_t shard) {
  MutexLock lock(mu_);
  to_claim_.push_back(shard);
}

void Receiver::Report(report::ClusterReport* f) const {
  MutexLock lock(mu_);
  f->urls_received = urls_received_;
  f->batches_applied = batches_applied_;
  f->malformed = malformed_;
}

uint32_t Receiver::ShardOfStreamKey(std::string_view key) {
  uint32_t shard = 0;
  std::string_view num = key.substr(key.rfind(':') + 1);
  std::from_chars(num.data(), num.data() + num.size(), shard);
  return shard;
}

Receiver::Shards Receiver::WithoutUnmade(const Shards& shards) {
  MutexLock lock(mu_);
  if (unmade_.empty() || !create_backoff_.Paused(std::chrono::steady_clock::now()))
    return shards;
  Shards out;
  for (const auto& [s, epoch] : shards)
    if (unmade_.count(s) == 0) out.emplace_back(s, epoch);
  return out;
}

bool Receiver::ReadNew(Redis& redis, const Shards& asked, bool* did, size_t* got) {
  *got = 0;
  const Shards shards = WithoutUnmade(asked);
  if (shards.empty() || !BellRang(redis, shards)) return true;
  std::vector<std::string> cmd = {
      "EVAL",        kReceiveScript,    std::to_string(5 + 2 * shards.size()),
      key_("state"), key_("delivered"), key_("bell:" + node_),
      key_("busy"),  key_("assign_v")};
  for (const auto& [s, epoch] : shards) cmd.push_back(StreamKey(s));
  for (const auto& [s, epoch] : shards) cmd.push_back(key_("lease:" + std::to_string(s)));
  cmd.push_back(node_);
  cmd.push_back("64");
  for (const auto& [s, epoch] : shards) cmd.push_back(Token(epoch));
  auto r = redis.Command(cmd);
  if (!r.ok()) {
    // Redis may have delivered entries (now pending for this node) and died
    // before its reply came: they are claimed and read again once it is back.
    {
      MutexLock lock(mu_);
      for (const auto& [s, epoch] : shards) to_claim_.push_back(s);
    }
    bell_.Force();
    return false;
  }
  if (r->IsError()) return ReadError(redis, *r, shards);
  const std::string bell = (*r)[0].str();
  assign_seen_ = (*r)[2].str();
  *got = ToInbox((*r)[1]);
  bell_.Read(bell, *got);
  if (*got > 0) *did = true;
  return true;
}

bool Receiver::ReadOwnPending(Redis& redis, const Shards& shards) {
  bool ignored = false;
  return shards.empty() || ReadPending(redis, shards, /*chunked=*/false, &ignored);
}

bool Receiver::ReadPending(Redis& redis, const Shards& shards, bool chunked, bool* did) {
  // This node's own unacknowledged entries (after ID 0, or the last one
  // read): not counted again as deliveries.
  std::vector<std::string> cmd = {
      "XREADGROUP", "GROUP", "owners",
      node_,        "COUNT", chunked ? std::to_string(kPendingChunk) : "1000000",
      "STREAMS"};
  for (const auto& [s, epoch] : shards) cmd.push_back(StreamKey(s));
  {
    MutexLock lock(mu_);
    for (const auto& [s, epoch] : shards) {
      auto it = pending_from_.find(s);
      cmd.push_back(chunked && it != pending_from_.end() ? it->second : "0");
    }
  }
  auto r = redis.Command(cmd);
  if (!r.ok()) {
    bell_.Force();
    return false;
  }
  if (r->IsError()) return ReadError(redis, *r, shards);
  const size_t got = ToInbox(r->view());
  if (chunked) PendingRead(shards, r->view());
  if (got > 0) *did = true;
  return true;
}

bool Receiver::ReadError(Redis& redis, const RedisReply& r, const Shards& shards) {
  const std::string& error = r.Str();
  if (error.rfind("NOGROUP", 0) != 0) return !failed_(r, "read");
  // A stream or its group that is not there: never made (the join's make
  // and every send to it were refused: Redis full) or deleted by hand. Made
  // again from the start of what is left (a batch read twice is harmless):
  // the one the error names ("No such key 'KEY' or consumer group ..."),
  // else every shard read.
  std::vector<uint32_t> make;
  const size_t open = error.find('\'');
  const size_t close = open == std::string::npos ? open : error.find('\'', open + 1);
  if (close != std::string::npos) {
    const std::string key = error.substr(open + 1, close - open - 1);
    for (const auto& [s, epoch] : shards)
      if (StreamKey(s) == key) make.push_back(s);
  }
  if (make.empty())
    for (const auto& [s, epoch] : shards) make.push_back(s);
  std::vector<std::vector<std::string>> create;
  for (uint32_t s : make)
    create.push_back({"XGROUP", "CREATE", StreamKey(s), "owners", "0", "MKSTREAM"});
  auto made = redis.Pipeline(create);
  if (!made.ok()) return false;
  std::string refused;
  for (size_t i = 0; i < make.size(); ++i) {
    const RedisReply& c = (*made)[i];
    if (!c.IsError() || c.Str().rfind("BUSYGROUP", 0) == 0) continue;
    if (RefusalOf(c.Str()).empty()) return !failed_(c, "making a stream");
    refused = c.Str();
  }
  const auto now = std::chrono::steady_clock::now();
  MutexLock lock(mu_);
  if (refused.empty()) {
    for (uint32_t s : make) unmade_.erase(s);
    if (unmade_.empty()) create_backoff_.Accepted(now);
    if (nogroup_log_.Due(now)) spdlog::info("redis: read: {}: made again", error);
    return true;
  }
  unmade_.insert(make.begin(), make.end());
  if (create_backoff_.Refused(now)) {
    spdlog::warn(
        "redis: the stream of shard {} (and {} more) could not be made: Redis is {}; "
        "the others are read meanwhile, and it is tried again with back-off",
        make.front(), unmade_.size() - 1, RefusalOf(refused));
  }
  return true;
}

bool Receiver::ClaimAndRead(
    Redis& redis, const std::function<Shards(const std::vector<uint32_t>&)>& readable,
    const std::function<bool(uint32_t)>& held, bool* did) {
  std::vector<uint32_t> shards;
  {
    MutexLock lock(mu_);
    shards.swap(to_claim_);
  }
  std::sort(shards.begin(), shards.end());  // queued more than once: claimed once
  shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
  // Every entry still pending in their streams (a dead node's included)
  // becomes this node's, then is read like a resumed node's own: a chunk a
  // round, from the first.
  for (uint32_t s : shards) {
    if (!ClaimPending(redis, s)) {
      MutexLock lock(mu_);
      to_claim_.insert(to_claim_.end(), shards.begin(), shards.end());
      return false;
    }
  }
  std::vector<uint32_t> reading;
  {
    MutexLock lock(mu_);
    // (Moved in, not assigned from a literal: GCC 12 -O3 warns falsely
    // (-Wrestrict) on the inlined string assignment.)
    for (uint32_t s : shards) pending_from_.insert_or_assign(s, std::string("0"));
    // A shard no longer held (given up, lost) leaves pending_from_: its new
    // owner claims what is pending. One held but not readable now (lapsed,
    // or loading) stays, and is read once it is.
    for (auto it = pending_from_.begin(); it != pending_from_.end();) {
      if (!held(it->first)) {
        it = pending_from_.erase(it);
      } else {
        reading.push_back(it->first);
        ++it;
      }
    }
  }
  const Shards now = readable(reading);
  // A failed read keeps each shard's place in pending_from_: tried again.
  return now.empty() || ReadPending(redis, now, /*chunked=*/true, did);
}

bool Receiver::ClaimPending(Redis& redis, uint32_t shard) {
  std::string cursor = "0-0";
  do {
    auto r = redis.Command({"XAUTOCLAIM", StreamKey(shard), "owners", node_, "0", cursor,
                            "COUNT", "10000", "JUSTID"});
    if (!r.ok()) return false;
    if (r->IsError()) {
      spdlog::warn("redis: claim of shard {}: {}", shard, r->Str());
      return true;
    }
    cursor = (*r)[0].str();  // the next start ("0-0": the stream's end)
  } while (cursor != "0-0" && !cursor.empty());
  return true;
}

void Receiver::PendingRead(const Shards& asked, ReplyView streams) {
  std::map<uint32_t, std::string> last;  // the shards with entries in the reply
  for (size_t i = 0; i < streams.size(); ++i) {
    const ReplyView list = streams[i][1];
    if (list.size() == 0) continue;
    last[ShardOfStreamKey(streams[i][0].str())] = list.back()[0].str();
  }
  MutexLock lock(mu_);
  for (const auto& [s, epoch] : asked) {
    auto it = last.find(s);
    // None left: done with it.
    if (it == last.end() || it->second.empty()) {
      pending_from_.erase(s);
    } else {
      pending_from_[s] = it->second;
    }
  }
}

bool Receiver::BellRang(Redis& redis, const Shards& shards) {
  switch (bell_.Before(shards, std::chrono::steady_clock::now())) {
    case Doorbell::Next::kRead:
      return true;
    case Doorbell::Next::kSkip:
      return false;
    case Doorbell::Next::kLook:
      break;
  }
  auto r = redis.Command({"MGET", key_("bell:" + node_), key_("assign_v")});
  // A broken connection or an error: the full read meets it and says so.
  if (!r.ok() || r->IsError() || r->view().size() != 2) return true;
  const auto value = [](ReplyView v) { return v.nil() ? std::string("0") : v.str(); };
  assign_seen_ = value((*r)[1]);
  return bell_.Looked(value((*r)[0]), std::chrono::steady_clock::now());
}

size_t Receiver::ToInbox(ReplyView streams) {
  size_t got = 0;
  std::vector<frontier::UrlEntry> entries;
  std::vector<StreamEntry> ids;
  uint64_t malformed = 0;
  for (size_t i = 0; i < streams.size(); ++i) {
    const std::string key = streams[i][0].str();
    const uint32_t shard = ShardOfStreamKey(key);
    const ReplyView list = streams[i][1];
    for (size_t j = 0; j < list.size(); ++j) {
      const std::string id = list[j][0].str();
      if (id.empty()) continue;  // deleted meanwhile (XCLAIM of a trimmed entry)
      std::string z, b;
      list[j][1].ForEachPair([&](ReplyView field, ReplyView value) {
        if (field.str() == "z") z = value.str();
        if (field.str() == "b") b = value.str();
      });
      ++got;
      std::string raw;
      size_t raw_len = 0;
      std::from_chars(b.data(), b.data() + b.size(), raw_len);
      if (!Uncompress(z, raw_len, &raw) || !ParseLines(raw, &entries)) {
        ++malformed;
        spdlog::warn("cluster: malformed stream entry {} in {}: skipped", id, key);
      }
      ids.push_back(StreamEntry{shard, id});
    }
  }
  if (got == 0) return 0;
  MutexLock lock(mu_);
  malformed_ += malformed;
  batches_applied_ += got;
  inbox_.Add(std::move(entries), std::move(ids));
  return got;
}

bool Receiver::Reclaim(Redis& redis, const Shards& shards, std::chrono::milliseconds idle,
                       bool* did) {
  if (shards.empty()) return true;
  std::vector<std::string> cmd = {"EVAL", kReclaimScript,
                                  std::to_string(2 * shards.size())};
  for (const auto& [s, epoch] : shards) cmd.push_back(StreamKey(s));
  for (const auto& [s, epoch] : shards) cmd.push_back(key_("lease:" + std::to_string(s)));
  cmd.push_back(node_);
  cmd.push_back(std::to_string(idle.count()));
  cmd.push_back("1000");
  for (const auto& [s, epoch] : shards) cmd.push_back(Token(epoch));
  auto r = redis.Command(cmd);
  if (!r.ok()) return false;
  if (r->IsError()) return !failed_(*r, "reclaim");
  const size_t got = ToInbox(r->view());
  if (got == 0) return true;
  *did = true;
  spdlog::warn(
      "cluster: reclaimed {} stream entries of {} shards left pending for another "
      "consumer over {:.1f} s (cluster.lease_s)",
      got, r->view().size(), std::chrono::duration<double>(idle).count());
  return true;
}

}  // namespace crawler::cluster
