// Shard transfer, the giving side (transfer.h).
#include "cluster/handoff/transfer.h"

#include <algorithm>
#include <cstddef>

namespace crawler::cluster {

bool Transfers::Begin(uint32_t shard, const std::string& to) {
  auto it = handoff_.find(shard);
  if (it != handoff_.end()) {
    it->second.to = to;
    return false;
  }
  handoff_[shard] = Handoff{Phase::kDraining, 0, to};
  return true;
}

std::optional<std::string> Transfers::Cancel(uint32_t shard) {
  auto it = handoff_.find(shard);
  if (it == handoff_.end()) return std::nullopt;
  std::string to = it->second.to;
  handoff_.erase(it);
  return to;
}

std::vector<uint32_t> Transfers::Draining(Clock::time_point now) {
  std::vector<uint32_t> out;
  if (now - last_drain_ < std::chrono::milliseconds(100)) return out;
  last_drain_ = now;
  for (const auto& [shard, h] : handoff_)
    if (h.phase == Phase::kDraining) out.push_back(shard);
  return out;
}

void Transfers::Drained(const std::vector<uint32_t>& shards) {
  for (uint32_t s : shards) {
    auto it = handoff_.find(s);
    if (it != handoff_.end() && it->second.phase == Phase::kDraining)
      it->second.phase = Phase::kDrained;
  }
}

bool Transfers::CutWanted() const {
  return std::any_of(handoff_.begin(), handoff_.end(),
                     [](const auto& h) { return h.second.phase == Phase::kDrained; });
}

bool Transfers::HoldCuts() const {
  return std::any_of(handoff_.begin(), handoff_.end(),
                     [](const auto& h) { return h.second.phase == Phase::kCut; });
}

void Transfers::Cut(uint64_t sequence) {
  for (auto& [shard, h] : handoff_) {
    if (h.phase != Phase::kDrained) continue;
    h.phase = Phase::kCut;
    h.sequence = sequence;
  }
}

std::map<uint64_t, std::vector<uint32_t>> Transfers::Committed(uint64_t committed,
                                                               std::string* to) const {
  std::map<uint64_t, std::vector<uint32_t>> by_sequence;
  for (const auto& [s, h] : handoff_) {
    if (h.phase != Phase::kCut || h.sequence > committed) continue;
    by_sequence[h.sequence].push_back(s);
    *to = h.to;
  }
  return by_sequence;
}

void Transfers::GaveUp(uint32_t shard, uint64_t sequence, const std::string& lease) {
  released_[shard] = sequence;
  untaken_[shard] = lease;
  to_release_.emplace_back(shard, lease);
  handoff_.erase(shard);
  to_drop_.push_back(shard);
}

void Transfers::ReleasesSent(size_t n) {
  to_release_.erase(
      to_release_.begin(),
      to_release_.begin() + static_cast<std::ptrdiff_t>(std::min(n, to_release_.size())));
}

std::vector<uint32_t> Transfers::TakeDrops() {
  std::vector<uint32_t> out;
  out.swap(to_drop_);
  dropping_.insert(out.begin(), out.end());
  return out;
}

void Transfers::Dropped(const std::vector<uint32_t>& shards) {
  for (uint32_t s : shards) dropping_.erase(s);
}

bool Transfers::Dropping(uint32_t shard) const {
  return dropping_.count(shard) > 0 ||
         std::find(to_drop_.begin(), to_drop_.end(), shard) != to_drop_.end();
}

std::vector<uint32_t> Transfers::ReleasedShards() const {
  std::vector<uint32_t> out;
  for (const auto& [s, seq] : released_) out.push_back(s);
  return out;
}

void Transfers::SourceIs(uint32_t shard, const std::string& source,
                         const std::string& self) {
  auto it = released_.find(shard);
  if (it == released_.end()) return;
  if (source != self + " " + std::to_string(it->second))
    released_.erase(it);  // the new owner's checkpoint holds it now
}

std::vector<uint32_t> Transfers::UntakenShards() const {
  std::vector<uint32_t> out;
  for (const auto& [s, lease] : untaken_) out.push_back(s);
  return out;
}

void Transfers::HolderIs(uint32_t shard, const std::string& holder) {
  auto it = untaken_.find(shard);
  if (it != untaken_.end() && holder != it->second) untaken_.erase(it);
}

void Transfers::TakenBack(uint32_t shard) {
  released_.erase(shard);
  untaken_.erase(shard);
}

}  // namespace crawler::cluster
