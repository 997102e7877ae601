// The RAM part of a cluster node's outbox (outbox.h).
#include "cluster/exchange/outbox.h"

#include <algorithm>
#include <utility>

#include "cluster/redis/cluster_wire.h"

namespace crawler::cluster {

Outbox::Outbox(uint32_t shards, uint32_t batch_urls, std::chrono::milliseconds batch_ms,
               uint64_t max_lag_batches)
    : batch_urls_(std::max<uint32_t>(batch_urls, 1)),
      batch_ms_(batch_ms),
      max_lag_(max_lag_batches),
      lag_(shards, 0) {}

void Outbox::Add(uint32_t shard, const frontier::UrlEntry& entry, Clock::time_point now) {
  OutBatch& b = filling_[shard];
  if (b.urls == 0) {
    b.shard = shard;
    b.first = now;
  }
  ++b.urls;
  cluster_wire::AppendLine(entry, &b.lines);
  ++queued_urls_;
  if (b.urls >= batch_urls_) {  // one stream entry holds batch_urls at most
    full_.push_back(std::move(b));
    filling_.erase(shard);
  }
}

std::vector<OutBatch> Outbox::TakeNew(bool flush_all, Clock::time_point now) {
  std::vector<OutBatch> fresh = std::move(full_);
  full_.clear();
  for (auto it = filling_.begin(); it != filling_.end();) {
    if (flush_all || now - it->second.first >= batch_ms_) {
      fresh.push_back(std::move(it->second));
      it = filling_.erase(it);
    } else {
      ++it;
    }
  }
  return fresh;
}

std::vector<OutBatch> Outbox::Select(bool flush_all, Clock::time_point now) {
  std::vector<OutBatch> due;
  std::vector<OutBatch> fresh = TakeNew(flush_all, now);
  for (auto it = held_.begin(); it != held_.end();) {
    std::deque<OutBatch>& q = it->second;
    while (!q.empty() && Room(it->first) > 0) {
      held_urls_ -= q.front().urls;
      ++lag_[it->first];
      due.push_back(std::move(q.front()));
      q.pop_front();
    }
    it = q.empty() ? held_.erase(it) : std::next(it);
  }
  for (OutBatch& b : fresh) {
    if (Room(b.shard) > 0) {
      ++lag_[b.shard];
      due.push_back(std::move(b));
    } else {
      Hold(std::move(b));
    }
  }
  sending_ = due;
  return due;
}

void Outbox::HoldDue(Clock::time_point now) {
  for (OutBatch& b : TakeNew(false, now)) Hold(std::move(b));
}

void Outbox::Sending(const OutBatch& batch) {
  ++lag_[batch.shard];
  sending_.push_back(batch);
}

void Outbox::Confirmed(const OutBatch& batch, std::optional<uint64_t> lag) {
  queued_urls_ -= std::min<uint64_t>(queued_urls_, batch.urls);
  if (lag) lag_[batch.shard] = *lag;
}

void Outbox::Hold(OutBatch batch) {
  held_urls_ += batch.urls;
  const uint32_t shard = batch.shard;
  held_[shard].push_back(std::move(batch));
}

std::map<uint32_t, std::deque<OutBatch>> Outbox::TakeHeld() {
  std::map<uint32_t, std::deque<OutBatch>> out;
  out.swap(held_);
  held_urls_ = 0;
  return out;
}

uint64_t Outbox::Room(uint32_t shard) const {
  return lag_[shard] < max_lag_ ? max_lag_ - lag_[shard] : 0;
}

uint64_t Outbox::SpillRoom(uint32_t shard) const {
  return held_.count(shard) > 0 ? 0 : std::min<uint64_t>(Room(shard), 64);
}

std::vector<uint32_t> Outbox::HeldShards() const {
  std::vector<uint32_t> shards;
  for (const auto& [shard, q] : held_) shards.push_back(shard);
  return shards;
}

void Outbox::AppendCut(std::string* text) const {
  for (const OutBatch& b : sending_) *text += b.lines;
  for (const OutBatch& b : full_) *text += b.lines;
  for (const auto& [shard, b] : filling_) *text += b.lines;
  for (const auto& [shard, q] : held_)
    for (const OutBatch& b : q) *text += b.lines;
}

}  // namespace crawler::cluster
