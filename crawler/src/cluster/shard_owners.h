// Where each shard lives (cluster.h, Ownership): rendezvous hashing over
// the live nodes, unless the hash assign names a live node for the shard
// (work-aware placement: a busy node gives its heaviest shards to an idle
// one, balance.h). Pure logic, no Redis: the exchange thread feeds it the
// assign hash as each heartbeat reads it (Read, when its version moved) and
// its own gives (Give); Want asks OwnerOf. Unit-tested without Redis
// (cluster_owners_test.cc).
#ifndef CRAWLER_CLUSTER_SHARD_OWNERS_H_
#define CRAWLER_CLUSTER_SHARD_OWNERS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace crawler::engine {

// Rendezvous hashing: the index in `nodes` (sorted) of `shard`'s owner, the
// node with the highest XXH3-64(name, seed = shard).
uint32_t ShardOwner(const std::vector<std::string>& nodes, uint32_t shard);

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
  // The version last read ("": never).
  const std::string& version() const { return version_; }
  // `shard`'s owner among `live` (sorted, not empty): the node the assign
  // names if it is live, else rendezvous hashing's.
  const std::string& OwnerOf(const std::vector<std::string>& live, uint32_t shard) const;

 private:
  const uint32_t shards_;
  std::map<uint32_t, std::string> assign_;
  std::string version_;
};

}  // namespace crawler::engine

#endif  // CRAWLER_CLUSTER_SHARD_OWNERS_H_
