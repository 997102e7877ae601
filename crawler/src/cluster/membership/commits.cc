// See commits.h.
#include "cluster/membership/commits.h"

#include <algorithm>

namespace crawler::cluster {

void Commits::GaveUp(uint32_t shard) {
  for (auto& [seq, held] : cuts_)
    held.erase(std::remove_if(held.begin(), held.end(),
                              [shard](const auto& p) { return p.first == shard; }),
               held.end());
}

void Commits::TakenAgain(uint32_t shard, uint64_t epoch) {
  for (auto& [seq, held] : cuts_)
    for (auto& [s, e] : held)
      if (s == shard && e < epoch) e = epoch;
}

std::set<uint32_t> Commits::ShardsBefore(uint64_t sequence) const {
  // checkpoint.prev/ once `sequence` is checkpoint/.
  auto it = cuts_.lower_bound(sequence);
  if (it == cuts_.begin()) return last_committed_;
  --it;
  std::set<uint32_t> out;
  for (const auto& [shard, epoch] : it->second) out.insert(shard);
  return out;
}

std::optional<Commits::Request> Commits::Next() const {
  if (published_ <= committed_) return std::nullopt;
  Request r;
  r.sequence = published_;
  auto it = cuts_.find(r.sequence);
  if (it != cuts_.end()) r.shards = it->second;
  r.before = ShardsBefore(r.sequence);
  for (const auto& [shard, epoch] : r.shards) {
    r.args.push_back(std::to_string(shard) + " " + std::to_string(epoch));
    auto from = from_.find(shard);
    if (r.before.count(shard) == 0 && from != from_.end())
      r.args.back() += " " + from->second;
  }
  return r;
}

void Commits::Accepted(const Request& request) {
  committed_ = std::max(committed_, request.sequence);
  last_committed_.clear();
  for (const auto& [shard, epoch] : request.shards) {
    last_committed_.insert(shard);
    if (request.before.count(shard) > 0) from_.erase(shard);
  }
  cuts_.erase(cuts_.begin(), cuts_.upper_bound(request.sequence));
}

}  // namespace crawler::cluster
