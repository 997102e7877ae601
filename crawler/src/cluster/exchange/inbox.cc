// The inbox of a cluster node and its ledger of stream entries (inbox.h).
#include "cluster/exchange/inbox.h"

#include <algorithm>
#include <utility>

namespace crawler::cluster {

void Inbox::Add(std::vector<frontier::UrlEntry> urls, std::vector<StreamEntry> entries) {
  for (auto& u : urls) urls_.push_back(std::move(u));
  for (auto& e : entries) received_.push_back(std::move(e));
}

std::vector<frontier::UrlEntry> Inbox::Take() {
  std::vector<frontier::UrlEntry> out;
  out.swap(urls_);
  ++admitting_;
  for (StreamEntry& e : received_) applied_.push_back(std::move(e));
  received_.clear();
  return out;
}

void Inbox::Cut(uint64_t sequence) {
  std::vector<StreamEntry>& v = cut_[sequence];
  for (StreamEntry& e : applied_) v.push_back(std::move(e));
  applied_.clear();
}

void Inbox::Committed(uint64_t sequence, bool last) {
  if (!last && sequence <= committed_) return;  // not newer: nothing moves
  const uint64_t upto = last ? sequence : committed_;
  committed_ = std::max(committed_, sequence);
  for (auto it = cut_.begin(); it != cut_.end() && it->first <= upto;) {
    for (StreamEntry& e : it->second) to_ack_.push_back(std::move(e));
    it = cut_.erase(it);
  }
}

std::vector<StreamEntry> Inbox::TakeAcks() {
  std::vector<StreamEntry> out;
  out.swap(to_ack_);
  return out;
}

void Inbox::Retry(std::vector<StreamEntry> entries) {
  for (StreamEntry& e : entries) to_ack_.push_back(std::move(e));
}

bool Inbox::AwaitingCut() const {
  return !applied_.empty() || std::any_of(cut_.begin(), cut_.end(), [](const auto& c) {
    return !c.second.empty();
  });
}

}  // namespace crawler::cluster
