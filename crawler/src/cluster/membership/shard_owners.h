// Where each shard lives (cluster.h, Ownership): rendezvous hashing with
// bounded loads over the live nodes (PlaceShards), unless the hash assign names a live
// node for the shard (work-aware placement: a busy node gives its heaviest shards to an
// idle one, balance.h). Pure logic, no Redis: the exchange thread feeds it the assign
// hash as each heartbeat reads it (Read, when its version moved) and its own gives
// (Give); Want asks OwnerOf. Unit-tested without Redis (cluster_owners_test.cc).
#ifndef CRAWLER_CLUSTER_SHARD_OWNERS_H_
#define CRAWLER_CLUSTER_SHARD_OWNERS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace crawler::cluster {

// A host's shard: XXH3-64(host key, the job's seed) mod `shards`.
uint32_t ShardOfHost(std::string_view host_key, uint64_t seed, uint32_t shards);

// Rendezvous hashing: the index in `nodes` (sorted) of `shard`'s owner, the
// node with the highest XXH3-64(name, seed = shard).
uint32_t ShardOwner(const std::vector<std::string>& nodes, uint32_t shard);

// Each shard's owner (an index in `nodes`, sorted, not empty) by rendezvous
// hashing with bounded loads, the job's seed hosts as the weights
// (`weights[s]`: seed hosts in shard s; missing = 0). Rendezvous hashing
// alone gave 6 nodes 24 to 44 of 200 hosts (docs/benchmarks.md), and the
// busiest node set the crawl's time. Here the weighted shards, heaviest
// first (ties: lower shard first), each go to the first node in their
// rendezvous order whose seed hosts stay within `cap` = ceil(1.05 x total /
// nodes) (none: the least loaded, first in that order); shards with no seed
// host follow rendezvous hashing alone. Pure: every node computes the same
// table from the same live set. No weights: ShardOwner's table.
std::vector<uint32_t> PlaceShards(const std::vector<std::string>& nodes,
                                  const std::vector<uint32_t>& weights, uint32_t shards);

// The weights as the job's meta hash keeps them: "SHARD:WEIGHT" pairs
// joined by ',' (shards of weight 0 left out). Decode drops a malformed pair
// or one naming no shard below `shards` (every node reads the same text,
// so every node computes the same table).
std::string EncodeWeights(const std::vector<uint32_t>& weights);
std::vector<uint32_t> DecodeWeights(std::string_view text, uint32_t shards);

class ShardOwners {
 public:
  explicit ShardOwners(uint32_t shards) : shards_(shards) {}

  // The assign hash as read ({shard, node} pairs, HGETALL's order) at
  // `version`: it replaces the one held. A pair that names no shard of the
  // job is dropped.
  void Read(const std::vector<std::pair<std::string, std::string>>& assign,
            std::string version);
  // This node gave `shard` to `to` (as every node reads it next).
  void Give(uint32_t shard, const std::string& to) { assign_[shard] = to; }
  // The job's seed hosts per shard (PlaceShards), fixed when it was created.
  void SetWeights(std::vector<uint32_t> weights);
  // The version last read ("": never).
  const std::string& version() const { return version_; }
  // `shard`'s owner among `live` (sorted, not empty): the node the assign
  // names if it is live, else PlaceShards' (computed once per live set).
  const std::string& OwnerOf(const std::vector<std::string>& live, uint32_t shard);

 private:
  const uint32_t shards_;
  std::map<uint32_t, std::string> assign_;
  std::string version_;
  std::vector<uint32_t> weights_;
  std::vector<std::string> placed_for_;  // the live set `placed_` is for
  std::vector<uint32_t> placed_;
};

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_SHARD_OWNERS_H_
