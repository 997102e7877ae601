// The lease table (leases.h).
#include "cluster/membership/leases.h"

#include <utility>

namespace crawler::cluster {

Leases::Leases(std::string node, uint32_t shards, std::chrono::milliseconds ttl)
    : node_(std::move(node)),
      ttl_(ttl),
      epoch_(shards, 0),
      state_(shards, State::kNone),
      until_(new std::atomic<int64_t>[shards]) {
  for (uint32_t s = 0; s < shards; ++s) until_[s] = 0;
}

int64_t Leases::UntilOf(std::chrono::steady_clock::time_point sent) const {
  return (sent + ttl_ - ttl_ / 100).time_since_epoch().count();
}

Leases::Outcome Leases::Apply(uint32_t shard, const LeaseReply& reply, int64_t until_ns) {
  Outcome o;
  State& state = state_[shard];
  if (reply.state == "held" || reply.state == "taken") {
    const bool taken = reply.state == "taken";
    o.held = true;
    // Taken while this node thought it held it: paused between two rounds,
    // it expired before this node noticed.
    o.unnoticed = taken && state == State::kHeld;
    o.again = taken && state != State::kNone;
    o.renewed = !o.again && state == State::kExpired;
    o.gained = state == State::kNone || state == State::kLost;
    epoch_[shard] = reply.epoch;
    state = State::kHeld;
    until_[shard] = until_ns;
    return o;
  }
  epoch_[shard] = 0;
  until_[shard] = 0;
  if (Holds(shard)) {
    o.unnoticed = state == State::kHeld;
    o.lost = true;
    until_[shard] = 1;  // lapsed for good
    state = State::kLost;
  }
  return o;
}

std::vector<uint32_t> Leases::Expire(const std::vector<uint32_t>& shards,
                                     int64_t now_ns) {
  std::vector<uint32_t> expired;
  for (uint32_t s : shards) {
    if (state_[s] != State::kHeld || until_[s].load() > now_ns) continue;
    state_[s] = State::kExpired;
    expired.push_back(s);
  }
  return expired;
}

void Leases::Fenced(uint32_t shard) {
  until_[shard] = 1;
  if (state_[shard] == State::kHeld) state_[shard] = State::kExpired;
}

void Leases::GiveUp(uint32_t shard) {
  state_[shard] = State::kNone;
  epoch_[shard] = 0;
  until_[shard] = 0;
}

std::string Leases::Token(uint32_t shard) const {
  return node_ + " " + std::to_string(epoch_[shard]);
}

}  // namespace crawler::cluster
