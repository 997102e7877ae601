// Where each shard lives (shard_owners.h).
#include "cluster/membership/shard_owners.h"

#include <xxhash.h>

#include <algorithm>
#include <charconv>
#include <utility>

namespace crawler::cluster {

uint32_t ShardOfHost(std::string_view host_key, uint64_t seed, uint32_t shards) {
  return static_cast<uint32_t>(
      XXH3_64bits_withSeed(host_key.data(), host_key.size(), seed) % shards);
}

uint32_t ShardOwner(const std::vector<std::string>& nodes, uint32_t shard) {
  uint32_t owner = 0;
  uint64_t best = 0;
  for (uint32_t n = 0; n < nodes.size(); ++n) {
    uint64_t h = XXH3_64bits_withSeed(nodes[n].data(), nodes[n].size(), shard);
    if (n == 0 || h > best) {
      best = h;
      owner = n;
    }
  }
  return owner;
}

namespace {

// `nodes`' indices in `shard`'s rendezvous order (highest hash first).
std::vector<uint32_t> RendezvousOrder(const std::vector<std::string>& nodes,
                                      uint32_t shard) {
  std::vector<std::pair<uint64_t, uint32_t>> ranked;
  for (uint32_t n = 0; n < nodes.size(); ++n)
    ranked.emplace_back(XXH3_64bits_withSeed(nodes[n].data(), nodes[n].size(), shard), n);
  std::sort(ranked.begin(), ranked.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<uint32_t> order;
  for (const auto& [hash, n] : ranked) order.push_back(n);
  return order;
}

}  // namespace

std::vector<uint32_t> PlaceShards(const std::vector<std::string>& nodes,
                                  const std::vector<uint32_t>& weights, uint32_t shards) {
  std::vector<uint32_t> owner(shards);
  std::vector<uint32_t> weighted;
  uint64_t total = 0;
  for (uint32_t s = 0; s < shards; ++s) {
    owner[s] = ShardOwner(nodes, s);
    if (s < weights.size() && weights[s] > 0) {
      weighted.push_back(s);
      total += weights[s];
    }
  }
  if (total == 0 || nodes.size() < 2) return owner;
  const uint64_t cap = (total * 105 + nodes.size() * 100 - 1) / (nodes.size() * 100);
  std::stable_sort(weighted.begin(), weighted.end(),
                   [&](uint32_t a, uint32_t b) { return weights[a] > weights[b]; });
  std::vector<uint64_t> load(nodes.size(), 0);
  for (uint32_t s : weighted) {
    const std::vector<uint32_t> order = RendezvousOrder(nodes, s);
    uint32_t pick = order[0];
    for (uint32_t n : order)
      if (load[n] < load[pick]) pick = n;  // if none has room: the least loaded
    for (uint32_t n : order)
      if (load[n] + weights[s] <= cap) {
        pick = n;
        break;
      }
    owner[s] = pick;
    load[pick] += weights[s];
  }
  return owner;
}

std::string EncodeWeights(const std::vector<uint32_t>& weights) {
  std::string text;
  for (uint32_t s = 0; s < weights.size(); ++s) {
    if (weights[s] == 0) continue;
    if (!text.empty()) text += ',';
    text += std::to_string(s) + ':' + std::to_string(weights[s]);
  }
  return text;
}

std::vector<uint32_t> DecodeWeights(std::string_view text, uint32_t shards) {
  std::vector<uint32_t> weights(shards, 0);
  while (!text.empty()) {
    const size_t comma = std::min(text.find(','), text.size());
    const std::string_view pair = text.substr(0, comma);
    text.remove_prefix(std::min(comma + 1, text.size()));
    const size_t colon = pair.find(':');
    if (colon == std::string_view::npos) continue;
    uint32_t s = 0, w = 0;
    auto a = std::from_chars(pair.data(), pair.data() + colon, s);
    auto b = std::from_chars(pair.data() + colon + 1, pair.data() + pair.size(), w);
    if (a.ec == std::errc() && a.ptr == pair.data() + colon && b.ec == std::errc() &&
        b.ptr == pair.data() + pair.size() && s < shards)
      weights[s] = w;
  }
  return weights;
}

void ShardOwners::SetWeights(std::vector<uint32_t> weights) {
  weights_ = std::move(weights);
  placed_for_.clear();
}

void ShardOwners::Read(const std::vector<std::pair<std::string, std::string>>& assign,
                       std::string version) {
  assign_.clear();
  for (const auto& [shard, node] : assign) {
    uint32_t s = 0;
    auto [end, ec] = std::from_chars(shard.data(), shard.data() + shard.size(), s);
    if (ec == std::errc() && end == shard.data() + shard.size() && s < shards_)
      assign_[s] = node;
  }
  version_ = std::move(version);
}

const std::string& ShardOwners::OwnerOf(const std::vector<std::string>& live,
                                        uint32_t shard) {
  auto a = assign_.find(shard);
  if (a != assign_.end() && std::binary_search(live.begin(), live.end(), a->second))
    return a->second;
  if (placed_for_ != live || placed_.size() != shards_) {
    placed_ = PlaceShards(live, weights_, shards_);
    placed_for_ = live;
  }
  return live[placed_[shard]];
}

}  // namespace crawler::cluster
