// The lease table (cluster/membership/leases.h) without Redis: what each heartbeat
// reply, the passing of time, a fenced acknowledge and a handoff do to one
// shard's lease. (The leases against a real redis-server, with real nodes
// paused, cut off and killed: cluster_lease_test.cc.)
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "cluster/membership/leases.h"

namespace crawler::cluster {
namespace {

using State = Leases::State;
using namespace std::chrono_literals;

LeaseReply Reply(const std::string& state, uint64_t epoch,
                 const std::string& holder = "a", const std::string& source = "") {
  return LeaseReply{state, epoch, holder, source, ""};
}

TEST_CASE("Leases: a lease taken is valid until its renewal's TTL, then expires once",
          "[engine][cluster]") {
  Leases leases("a", 4, 10s);
  CHECK(leases.state(2) == State::kNone);
  CHECK_FALSE(leases.Valid(2, 0));
  CHECK_FALSE(leases.Lapsed(2, 1'000'000));  // never held is not lapsed
  CHECK(leases.Token(2) == "a 0");

  const auto sent = std::chrono::steady_clock::time_point(100s);
  const int64_t until = leases.UntilOf(sent);
  // The TTL less 1% for the two clocks' rates.
  CHECK(until == std::chrono::nanoseconds(100s + 10s - 100ms).count());

  Leases::Outcome o = leases.Apply(2, Reply("held", 7), until);
  CHECK(o.held);
  CHECK(o.gained);  // this process did not hold it
  CHECK_FALSE(o.again);
  CHECK_FALSE(o.renewed);
  CHECK_FALSE(o.unnoticed);
  CHECK_FALSE(o.lost);
  CHECK(leases.state(2) == State::kHeld);
  CHECK(leases.Holds(2));
  CHECK(leases.epoch(2) == 7);
  CHECK(leases.Token(2) == "a 7");
  CHECK(leases.Valid(2, until - 1));
  CHECK_FALSE(leases.Valid(2, until));
  CHECK_FALSE(leases.Lapsed(2, until - 1));
  CHECK(leases.Lapsed(2, until));

  // Renewed in time: held, nothing gained or renewed.
  o = leases.Apply(2, Reply("held", 7), until + 1000);
  CHECK(o.held);
  CHECK_FALSE(o.gained);
  CHECK_FALSE(o.renewed);

  // Time passes with no renewal: it expires, reported once, still held here
  // (renewed at each heartbeat) but not valid.
  CHECK(leases.Expire({1, 2, 3}, until).empty());  // valid until until + 1000
  CHECK(leases.Expire({1, 2, 3}, until + 1000) == std::vector<uint32_t>{2});
  CHECK(leases.Expire({1, 2, 3}, until + 5000).empty());
  CHECK(leases.state(2) == State::kExpired);
  CHECK(leases.Holds(2));
  CHECK(leases.Lapsed(2, until + 1000));

  // A renewal gets through: renewed, with the same epoch, valid again.
  o = leases.Apply(2, Reply("held", 7), until + 20'000);
  CHECK(o.held);
  CHECK(o.renewed);
  CHECK_FALSE(o.gained);
  CHECK_FALSE(o.again);
  CHECK(leases.state(2) == State::kHeld);
  CHECK(leases.Valid(2, until + 19'999));
}

TEST_CASE(
    "Leases: expired and free, it is taken again with a new epoch; taken from under a "
    "valid lease is noticed",
    "[engine][cluster]") {
  Leases leases("a", 2, 1s);
  leases.Apply(0, Reply("held", 3), 1000);
  REQUIRE(leases.Expire({0}, 1000) == std::vector<uint32_t>{0});
  // Nobody took it meanwhile: the script took it again with a new epoch.
  Leases::Outcome o = leases.Apply(0, Reply("taken", 4), 5000);
  CHECK(o.held);
  CHECK(o.again);
  CHECK_FALSE(o.renewed);  // a new epoch is "again", not "renewed"
  CHECK_FALSE(o.unnoticed);
  CHECK_FALSE(o.gained);  // its state is still here
  CHECK(leases.epoch(0) == 4);

  // This node thought it held epoch 4 (no Expire ran: it was paused), and
  // Redis says it was free and took it with epoch 5: unnoticed, again.
  o = leases.Apply(0, Reply("taken", 5), 9000);
  CHECK(o.unnoticed);
  CHECK(o.again);
  CHECK(leases.Token(0) == "a 5");
}

TEST_CASE("Leases: lost to another node, a lease is lapsed for good until taken again",
          "[engine][cluster]") {
  Leases leases("a", 3, 1s);
  leases.Apply(1, Reply("held", 2), 1000);
  Leases::Outcome o = leases.Apply(1, Reply("other", 3, "b"), 2000);
  CHECK_FALSE(o.held);
  CHECK(o.lost);
  CHECK(o.unnoticed);  // it was held and valid by this node's clock
  CHECK(leases.state(1) == State::kLost);
  CHECK_FALSE(leases.Holds(1));
  CHECK(leases.epoch(1) == 0);
  CHECK(leases.Lapsed(1, 5));  // at any time: nothing of its hosts goes out
  CHECK_FALSE(leases.Valid(1, 5));

  // Lost once is reported once.
  o = leases.Apply(1, Reply("other", 3, "b"), 3000);
  CHECK_FALSE(o.lost);
  CHECK_FALSE(o.unnoticed);

  // Expired here first, then free: lost, but not "unnoticed".
  leases.Apply(2, Reply("held", 1), 1000);
  leases.Expire({2}, 1000);
  o = leases.Apply(2, Reply("free", 1, "a"), 4000);
  CHECK(o.lost);
  CHECK_FALSE(o.unnoticed);

  // A lost lease taken later is gained: its state must be loaded again.
  o = leases.Apply(1, Reply("taken", 9), 9000);
  CHECK(o.held);
  CHECK(o.gained);
  CHECK(o.again);
  CHECK(leases.Valid(1, 8999));

  // A shard never held that another node holds: nothing changes.
  o = leases.Apply(0, Reply("other", 4, "c"), 1000);
  CHECK_FALSE(o.held);
  CHECK_FALSE(o.lost);
  CHECK_FALSE(o.unnoticed);
  CHECK(leases.state(0) == State::kNone);
  CHECK_FALSE(leases.Lapsed(0, 5000));
}

TEST_CASE("Leases: a fenced acknowledge lapses the lease; a handoff gives it up",
          "[engine][cluster]") {
  Leases leases("node-1", 2, 1s);
  leases.Apply(0, Reply("held", 6), 10'000);
  leases.Fenced(0);
  CHECK(leases.state(0) == State::kExpired);
  CHECK(leases.Holds(0));        // renewed (or found lost) at the next heartbeat
  CHECK(leases.epoch(0) == 6);   // with the epoch it had
  CHECK(leases.Lapsed(0, 500));  // not valid, though its renewal was recent
  CHECK_FALSE(leases.Valid(0, 500));
  CHECK(leases.Expire({0}, 20'000).empty());  // already expired: not reported twice
  Leases::Outcome o = leases.Apply(0, Reply("held", 6), 30'000);
  CHECK(o.renewed);
  CHECK(leases.Valid(0, 29'999));

  leases.Apply(1, Reply("held", 2), 10'000);
  CHECK(leases.Token(1) == "node-1 2");
  leases.GiveUp(1);
  CHECK(leases.state(1) == State::kNone);
  CHECK(leases.epoch(1) == 0);
  CHECK_FALSE(leases.Valid(1, 5));
  CHECK_FALSE(leases.Lapsed(1, 0));  // given up is not lapsed: never fenced
  // Taken back later: gained, its state loaded from the handoff checkpoint.
  o = leases.Apply(1, Reply("taken", 3), 40'000);
  CHECK(o.gained);
  CHECK_FALSE(o.again);  // it was given up, not lost or expired
}

}  // namespace
}  // namespace crawler::cluster
