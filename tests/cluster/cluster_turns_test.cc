// A node's turns at addresses (cluster/address_tokens.h) against a real
// redis-server: no Start waits on Redis, not even a Redis that does not
// answer (asked meanwhile, granted by the node alone once Redis is given
// up on); a turn granted waits for the next Start at its address and is
// given back if none takes it within its claim; a turn taken brings the
// address's next start back from the end of its claim to the delay after
// it.
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>

#include "cluster/address_tokens.h"
#include "redis_server.h"
#include "run_command.h"
#include "tcp_proxy.h"

namespace crawler::cluster {
namespace {

constexpr const char* kPrefix = "crawler:{turns}:";

struct TurnsFixture {
  testing::ScratchRedis scratch{"turns-test"};
  std::unique_ptr<Redis> probe;

  TurnsFixture() {
    auto a = ParseRedisUrl(scratch.server().Url());
    REQUIRE(a.ok());
    auto r = Redis::Connect(*a, 5);
    REQUIRE(r.ok());
    probe = std::move(r).value();
    // The node's liveness key: a start drops the turns of a process not in it.
    REQUIRE(probe->Command({"SET", std::string(kPrefix) + "alive:n1", "p1"}).ok());
  }
  // A node's turns, n1's process p1, through `port` (0: the server's own).
  std::unique_ptr<AddressTokens> Turns(AddressTokens::Limits limits, unsigned port = 0) {
    return std::make_unique<AddressTokens>(
        Address(port != 0 ? port : scratch.server().port()), kPrefix, "n1", "p1", limits);
  }
  RedisAddress Address(unsigned port) const {
    auto a = ParseRedisUrl("redis://127.0.0.1:" + std::to_string(port));
    REQUIRE(a.ok());
    return *a;
  }
  // The address's hash, field by field ("next", "claim", one per turn).
  std::map<std::string, std::string> Hash(const std::string& address) {
    auto r = probe->Command({"HGETALL", std::string(kPrefix) + "ip:" + address});
    REQUIRE(r.ok());
    std::map<std::string, std::string> out;
    r->view().ForEachPair([&](ReplyView f, ReplyView v) { out[f.str()] = v.str(); });
    return out;
  }
};

// Asks until `turns` grants a turn at `address` (each ask costs no round
// trip: the turn thread asks Redis meanwhile).
engine::AddressTurn WaitForTurn(AddressTokens& turns, const std::string& address,
                                uint64_t who) {
  engine::AddressTurn t;
  const bool got = testing::WaitFor(
      [&] {
        t = turns.Start(address, who);
        return t.granted;
      },
      30);
  REQUIRE(got);
  return t;
}

TEST_CASE(
    "Address turns: no Start waits on Redis; a turn granted waits for the next Start at "
    "its address, one not taken in its claim is given back",
    "[cluster][turns]") {
  TurnsFixture fx;
  auto owned = fx.Turns({0, 2, 60'000, 60'000});
  AddressTokens& turns = *owned;
  // Asked for: pending, not granted (a worker goes on with other hosts).
  engine::AddressTurn first = turns.Start("10.0.0.1", 7);
  CHECK_FALSE(first.granted);
  CHECK(first.pending);
  CHECK(first.wait.count() >= 1);
  // The answer is kept for the next Start there, any asker's.
  engine::AddressTurn t = WaitForTurn(turns, "10.0.0.1", 8);
  CHECK(t.token != 0);
  CHECK(fx.Hash("10.0.0.1").count("n1:p1:" + std::to_string(t.token)) == 1);
  turns.End("10.0.0.1", t.token);
  turns.Settle();
  CHECK(fx.Hash("10.0.0.1").count("n1:p1:" + std::to_string(t.token)) == 0);
  CHECK(turns.figures().local == 0);
  // A turn no one takes within its claim (1 ms here) goes back to Redis.
  auto brief = fx.Turns({0, 2, 60'000, 1});
  CHECK(brief->Start("10.0.0.2", 1).pending);
  REQUIRE(testing::WaitFor([&] { return brief->figures().unused == 1; }, 30));
  REQUIRE(testing::WaitFor([&] { return fx.Hash("10.0.0.2").size() == 1; }, 30));
  CHECK(fx.Hash("10.0.0.2").count("next") == 1);  // no turn left there
}

TEST_CASE(
    "Address turns: a Redis that does not answer costs no Start a wait; the node takes "
    "its turns alone once Redis is given up on",
    "[cluster][turns]") {
  TurnsFixture fx;
  testing::TcpProxy proxy(fx.scratch.server().port());
  auto owned = fx.Turns({0, 2, 60'000, 60'000}, proxy.port());
  AddressTokens& turns = *owned;
  WaitForTurn(turns, "10.0.0.1", 1);  // the connection is up
  proxy.Cut();
  // No Start waits out the turn threads' 2 s command timeout.
  engine::AddressTurn asked = turns.Start("10.0.0.3", 2);
  CHECK_FALSE(asked.granted);
  CHECK(asked.pending);
  CHECK(turns.figures().local == 0);
  engine::AddressTurn alone = WaitForTurn(turns, "10.0.0.3", 2);
  CHECK(turns.figures().local >= 1);
  turns.End("10.0.0.3", alone.token);
  proxy.Heal();
}

TEST_CASE(
    "Address turns: a turn taken brings the address's next start back from the end of "
    "its claim to the delay after it",
    "[cluster][turns]") {
  TurnsFixture fx;
  // 1 s between starts, a claim of 60 s: taken or not, no other start
  // would come for 61 s but for the turn's taking.
  auto owned = fx.Turns({1000, 2, 600'000, 60'000});
  AddressTokens& turns = *owned;
  CHECK(turns.Start("10.0.0.4", 1).pending);
  REQUIRE(testing::WaitFor([&] { return turns.figures().granted == 1; }, 30));
  std::map<std::string, std::string> granted = fx.Hash("10.0.0.4");
  REQUIRE(granted.count("claim") == 1);
  const long long claimed_next = std::stoll(granted.at("next"));
  engine::AddressTurn t = turns.Start("10.0.0.4", 1);
  REQUIRE(t.granted);
  CHECK(granted.at("claim") == "n1:p1:" + std::to_string(t.token));
  REQUIRE(testing::WaitFor([&] { return fx.Hash("10.0.0.4").count("claim") == 0; }, 30));
  const long long next = std::stoll(fx.Hash("10.0.0.4").at("next"));
  CHECK(next < claimed_next - 50'000);  // 1 s after the taking, not 61 s after the grant
  turns.End("10.0.0.4", t.token);
}

}  // namespace
}  // namespace crawler::cluster
