// Where each shard lives (cluster/shard_owners.h) without Redis: rendezvous
// hashing over the live nodes, unless the assign names a live node. (Real
// gives between real nodes: cluster_test.cc, "Cluster balance*".)
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cluster/shard_owners.h"

namespace crawler::engine {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

TEST_CASE(
    "ShardOwners: rendezvous hashing over the live nodes unless the assign names a live "
    "one; a bad assign entry is dropped",
    "[engine][cluster]") {
  const std::vector<std::string> three = {"a", "b", "c"}, two = {"a", "c"};
  ShardOwners p(64);
  CHECK(p.version().empty());
  for (uint32_t s = 0; s < 64; ++s) {
    CHECK(p.OwnerOf(three, s) == three[ShardOwner(three, s)]);
    // b gone: its shards spread over the others, the others' stay.
    if (p.OwnerOf(three, s) != "b") CHECK(p.OwnerOf(two, s) == p.OwnerOf(three, s));
  }
  // Shard 5 given to a node rendezvous hashing does not pick for it.
  const std::string other = p.OwnerOf(three, 5) == "a" ? "c" : "a";
  p.Read({{"5", other}, {"7", "b"}, {"64", "a"}, {"x", "a"}, {"3y", "a"}}, "4");
  CHECK(p.version() == "4");
  CHECK(p.OwnerOf(three, 5) == other);
  CHECK(p.OwnerOf(three, 7) == "b");
  // Assigned to a node that is not live: rendezvous hashing over the live.
  CHECK(p.OwnerOf(two, 7) == two[ShardOwner(two, 7)]);
  // "64" (no such shard), "x" and "3y" were dropped: shard 3 is hashed.
  CHECK(p.OwnerOf(three, 3) == three[ShardOwner(three, 3)]);

  // This node's own give counts at once; a later read replaces everything.
  p.Give(9, "c");
  CHECK(p.OwnerOf(three, 9) == "c");
  p.Read(Pairs{}, "5");
  CHECK(p.OwnerOf(three, 5) == three[ShardOwner(three, 5)]);
  CHECK(p.OwnerOf(three, 9) == three[ShardOwner(three, 9)]);
}

}  // namespace
}  // namespace crawler::engine
