// Shard transfer, the giving side (cluster/handoff/transfer.h), without Redis: a
// handoff's steps in their order, what each one holds back (cuts, the end
// of the crawl, a reload), a handoff cancelled, a shard taken back. (Real
// handoffs between real nodes on a real redis-server: cluster_test.cc,
// "Cluster join*", "Cluster handoff interrupted*", "Cluster balance*".)
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "cluster/handoff/transfer.h"

namespace crawler::cluster {
namespace {

using namespace std::chrono_literals;
using Clock = Transfers::Clock;
using Shards = std::vector<uint32_t>;

TEST_CASE(
    "Transfers: drained, cut, committed, given up, dropped, taken by the new owner; the "
    "crawl is not quiet until then",
    "[engine][cluster]") {
  Transfers t;
  const Clock::time_point t0(100s);
  CHECK(t.Quiet());
  CHECK(t.Begin(4, "b"));
  CHECK(t.Begin(9, "b"));
  CHECK_FALSE(t.Begin(4, "c"));  // under way: only its destination changes
  CHECK(t.Handing(4));
  CHECK(t.Work());
  CHECK(t.Giving());
  CHECK_FALSE(t.Quiet());

  // Drain: asked at most every 100 ms (a worker scans its hosts per answer).
  CHECK(t.Draining(t0) == Shards{4, 9});
  CHECK(t.Draining(t0 + 50ms).empty());
  CHECK_FALSE(t.CutWanted());
  t.Drained({4});
  CHECK(t.CutWanted());  // shard 4 waits for a checkpoint
  CHECK(t.Draining(t0 + 100ms) == Shards{9});

  // Checkpoint 7 is cut: shard 4 is in it; no other cut until it is kept.
  t.Cut(7);
  CHECK_FALSE(t.CutWanted());
  CHECK(t.HoldCuts());
  std::string to;
  CHECK(t.Committed(6, &to).empty());  // 7 not committed yet
  auto ready = t.Committed(7, &to);
  CHECK(ready == std::map<uint64_t, Shards>{{7, {4}}});
  CHECK(to == "c");

  // Given up in 7 with its lease "a 3", which goes to Redis next (until
  // Redis confirms it).
  CHECK(t.ToRelease().empty());
  t.GaveUp(4, 7, "a 3");
  using Leases = std::vector<std::pair<uint32_t, std::string>>;
  CHECK(t.ToRelease() == Leases{{4, "a 3"}});
  t.ReleasesSent(0);  // Redis did not answer
  CHECK(t.ToRelease() == Leases{{4, "a 3"}});
  t.ReleasesSent(1);
  CHECK(t.ToRelease().empty());
  CHECK_FALSE(t.Handing(4));
  CHECK_FALSE(t.HoldCuts());
  CHECK(t.Released(4));
  CHECK(t.ReleasedShards() == Shards{4});
  CHECK(t.UntakenShards() == Shards{4});
  CHECK(t.Dropping(4));  // a reload of shard 4 waits for the drop
  CHECK(t.TakeDrops() == Shards{4});
  CHECK(t.TakeDrops().empty());
  CHECK(t.Dropping(4));  // a worker is dropping it
  t.Dropped({4});
  CHECK_FALSE(t.Dropping(4));

  // Shard 9 is still being handed over: not quiet.
  CHECK(t.Cancel(9) == std::optional<std::string>("b"));
  CHECK_FALSE(t.Cancel(9));
  CHECK_FALSE(t.Work());
  // Shard 4's lease is not taken yet: still not quiet, no more giving.
  CHECK_FALSE(t.Quiet());
  CHECK(t.Giving());
  t.HolderIs(4, "a 3");  // still as given up (expired, nobody took it)
  CHECK_FALSE(t.Quiet());
  t.HolderIs(4, "c 4");  // the new owner holds it
  CHECK(t.Quiet());
  CHECK_FALSE(t.Giving());

  // Released until the shard's source is not checkpoint 7 of this node.
  t.SourceIs(4, "a 7", "a");
  CHECK(t.Released(4));
  t.SourceIs(4, "c 12", "a");
  CHECK_FALSE(t.Released(4));
}

TEST_CASE("Transfers: a shard given up and taken back is this node's again",
          "[engine][cluster]") {
  Transfers t;
  t.Begin(2, "b");
  t.Drained({2});
  t.Cut(3);
  std::string to;
  REQUIRE(t.Committed(3, &to).size() == 1);
  t.GaveUp(2, 3, "a 1");
  t.TakeDrops();
  t.Dropped({2});
  // The newcomer died before taking the lease; this node took it back and
  // loaded it from its handoff checkpoint.
  t.TakenBack(2);
  CHECK_FALSE(t.Released(2));
  CHECK(t.UntakenShards().empty());
  CHECK(t.Quiet());
}

TEST_CASE("Transfers: leases given up go to Redis until it confirms them, in order",
          "[engine][cluster]") {
  Transfers t;
  for (uint32_t s : {2u, 5u}) {
    t.Begin(s, "b");
    t.Drained({s});
  }
  t.Cut(3);
  t.GaveUp(2, 3, "a 1");
  // Sent with shard 2's; shard 5 is given up before the reply: only the
  // first is confirmed, shard 5's goes next.
  const size_t sent = t.ToRelease().size();
  t.GaveUp(5, 3, "a 2");
  t.ReleasesSent(sent);
  using Leases = std::vector<std::pair<uint32_t, std::string>>;
  CHECK(t.ToRelease() == Leases{{5, "a 2"}});
  t.ReleasesSent(5);  // more than there are: all
  CHECK(t.ToRelease().empty());
}

TEST_CASE("Transfers: a cut holds only the shards drained before it",
          "[engine][cluster]") {
  Transfers t;
  t.Begin(1, "b");
  t.Begin(2, "b");
  t.Drained({1});
  t.Cut(5);  // shard 1 in 5
  t.Drained({2});
  t.Cut(6);  // shard 2 in 6 (a second cut is held in practice; the state is exact)
  std::string to;
  CHECK(t.Committed(5, &to) == std::map<uint64_t, Shards>{{5, {1}}});
  CHECK(t.Committed(6, &to) == std::map<uint64_t, Shards>{{5, {1}}, {6, {2}}});
  t.Drained({1});  // already cut: stays cut in 5
  CHECK(t.Committed(5, &to) == std::map<uint64_t, Shards>{{5, {1}}});
}

}  // namespace
}  // namespace crawler::cluster
