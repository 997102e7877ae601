// Where each shard lives (shard_owners.h).
#include "cluster/shard_owners.h"

#include <xxhash.h>

#include <algorithm>
#include <charconv>

namespace crawler::engine {

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
                                        uint32_t shard) const {
  auto a = assign_.find(shard);
  if (a != assign_.end() && std::binary_search(live.begin(), live.end(), a->second))
    return a->second;
  return live[ShardOwner(live, shard)];
}

}  // namespace crawler::engine
