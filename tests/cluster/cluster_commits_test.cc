// The commits of a node's checkpoints (cluster/membership/commits.h), without Redis:
// only the newest published checkpoint is committed; a shard whose state came
// from elsewhere is named with its source until the checkpoint before a
// commit holds it; a shard given up leaves the cuts not committed yet; a
// fenced commit is not tried again. (kCommitScript on a real redis-server:
// cluster_lease_test.cc, "Commits*"; real nodes: cluster_test.cc, "Cluster
// join: the newcomer's first checkpoint holding shards is damaged*".)
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "cluster/membership/commits.h"

namespace crawler::cluster {
namespace {

using Args = std::vector<std::string>;

TEST_CASE("Commits: the newest published checkpoint, once; nothing before a publish",
          "[engine][cluster]") {
  Commits c;
  CHECK_FALSE(c.Next());
  c.Cut(1, {{4, 1}, {9, 2}});
  CHECK_FALSE(c.Next());  // cut, not published
  c.Published(1);
  c.Cut(2, {{4, 1}, {9, 2}});
  c.Published(2);
  CHECK(c.Pending());
  auto r = c.Next();
  REQUIRE(r);
  CHECK(r->sequence == 2);  // 1 is passed over: 2 holds all it did
  CHECK(r->args == Args{"4 1", "9 2"});
  CHECK(r->before == std::set<uint32_t>{4, 9});  // 1: published, not committed
  c.Accepted(*r);
  CHECK(c.committed() == 2);
  CHECK_FALSE(c.Pending());
  CHECK_FALSE(c.Next());
  c.Published(1);  // a late, older publish changes nothing
  CHECK_FALSE(c.Next());
}

TEST_CASE(
    "Commits: a shard loaded from elsewhere is named with its source until the "
    "checkpoint before a commit holds it",
    "[engine][cluster]") {
  Commits c;
  c.Cut(3, {{1, 5}});
  c.Published(3);
  c.Accepted(*c.Next());
  // Shard 7 taken over from node b's checkpoint 12 (or given by b).
  c.From(7, "b 12");
  c.Cut(4, {{1, 5}, {7, 2}});
  c.Published(4);
  auto r = c.Next();
  REQUIRE(r);
  CHECK(r->before == std::set<uint32_t>{1});  // checkpoint 3: the last committed
  CHECK(r->args == Args{"1 5", "7 2 b 12"});
  c.Accepted(*r);
  // Checkpoint 5's before is 4, which holds shard 7: named no more.
  c.Cut(5, {{1, 5}, {7, 2}});
  c.Published(5);
  r = c.Next();
  REQUIRE(r);
  CHECK(r->args == Args{"1 5", "7 2"});
  c.Accepted(*r);
  // The commit of 6 names shard 8's source; it gets no answer. 7 is cut
  // and published: its before is 6 (checkpoint.prev/ once 7 is
  // checkpoint/), published and not committed, which holds shard 8: so
  // the commit of 7 names it no more.
  c.From(8, "c 2");
  c.Cut(6, {{1, 5}, {7, 2}, {8, 1}});
  c.Published(6);
  r = c.Next();
  REQUIRE(r);
  CHECK(r->args.back() == "8 1 c 2");
  c.Cut(7, {{1, 5}, {7, 2}, {8, 1}});
  c.Published(7);
  r = c.Next();
  REQUIRE(r);
  CHECK(r->sequence == 7);
  CHECK(r->before == std::set<uint32_t>{1, 7, 8});
  CHECK(r->args == Args{"1 5", "7 2", "8 1"});
  // Forget: a shard that became this node's own with no source.
  c.From(9, "d 1");
  c.Forget(9);
  c.Accepted(*r);
  c.Cut(8, {{9, 1}});
  c.Published(8);
  r = c.Next();
  REQUIRE(r);
  CHECK(r->args == Args{"9 1"});
}

TEST_CASE("Commits: a shard given up leaves the cuts not committed; a fenced commit ends",
          "[engine][cluster]") {
  Commits c;
  c.Cut(2, {{3, 1}, {5, 1}});
  c.Cut(3, {{3, 1}, {5, 1}});
  c.Published(2);
  auto r = c.Next();
  REQUIRE(r);
  CHECK(r->args == Args{"3 1", "5 1"});
  c.Accepted(*r);
  c.GaveUp(5);  // its handoff checkpoint (2) is committed; 3 still lists it
  c.Published(3);
  r = c.Next();
  REQUIRE(r);
  CHECK(r->args == Args{"3 1"});
  c.Refused(*r);  // fenced
  CHECK_FALSE(c.Pending());
  CHECK_FALSE(c.Next());
}

TEST_CASE(
    "Commits: a lease taken again at the next epoch moves the cuts not committed yet "
    "to it; a committed cut, another shard and a newer epoch stay",
    "[engine][cluster]") {
  Commits c;
  c.Cut(2, {{3, 6}, {5, 2}});
  c.Published(2);
  auto r = c.Next();
  REQUIRE(r);
  c.Accepted(*r);
  c.Cut(3, {{3, 6}, {5, 2}});  // cut while shard 3's lease was epoch 6 ...
  c.Cut(4, {{3, 7}, {5, 2}});  // ... and after it was taken again
  c.TakenAgain(3, 7);          // Redis was away past lease_s; nobody took it
  c.Published(3);
  r = c.Next();
  REQUIRE(r);
  CHECK(r->args == Args{"3 7", "5 2"});  // the fence finds epoch 7, as Redis has it
  c.Accepted(*r);
  c.TakenAgain(3, 5);  // an older epoch changes nothing
  c.Published(4);
  r = c.Next();
  REQUIRE(r);
  CHECK(r->args == Args{"3 7", "5 2"});
}

}  // namespace
}  // namespace crawler::cluster
