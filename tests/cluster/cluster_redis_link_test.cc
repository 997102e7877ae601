// The exchange thread's connection (cluster/redis/redis_link.h) against a real
// redis-server: an error reply that is a refusal (READONLY, here a script's
// error with that code) is kept for the round and logged once per 30 s,
// another is not a refusal; a killed server is down, counted from the loss,
// and reconnected once it is back; Retry runs a step until it passes,
// reconnecting after each failure, and gives up only when stopped, naming
// what it was doing.
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <string>

#include "cluster/redis/redis_link.h"
#include "redis_server.h"

namespace crawler::cluster {
namespace {

struct LinkFixture {
  testing::ScratchRedis scratch{"redis-link-test"};
  testing::RedisServer* server = &scratch.server();
  RedisAddress address;

  LinkFixture() {
    auto a = ParseRedisUrl(server->Url());
    REQUIRE(a.ok());
    address = *a;
  }
  RedisLink Link() {
    auto r = Redis::Connect(address, 5);
    REQUIRE(r.ok());
    return RedisLink(address, std::move(r).value());
  }
};

TEST_CASE(
    "RedisLink: a refusal is kept for the round and logged once per 30 s; another error "
    "reply is no refusal; a killed server is down until it is back",
    "[engine][cluster]") {
  LinkFixture t;
  RedisLink link = t.Link();
  REQUIRE(link.up());
  CHECK(link.down_s(RedisLink::Clock::now()) == 0);
  auto ok = link->Command({"PING"});
  REQUIRE(ok.ok());
  CHECK_FALSE(link.Failed(*ok, "ping"));
  CHECK(link.refusal().empty());

  auto readonly = link->Command(
      {"EVAL",
       "return redis.error_reply('READONLY You can\\'t write against a read only "
       "replica.')",
       "0"});
  REQUIRE(readonly.ok());
  REQUIRE(readonly->IsError());
  CHECK(link.Failed(*readonly, "heartbeat"));
  CHECK_THAT(link.refusal(),
             Catch::StartsWith("heartbeat refused: Redis is a read-only"));
  const RedisLink::Clock::time_point t0 = RedisLink::Clock::now();
  CHECK(link.TakeRefusal(t0));  // the first: logged
  CHECK(link.refusal().empty());
  CHECK(link.Failed(*readonly, "heartbeat"));
  CHECK_FALSE(link.TakeRefusal(t0 + std::chrono::seconds(30)));
  CHECK(link.refusal().empty());  // cleared all the same
  CHECK(link.TakeRefusal(t0 + std::chrono::seconds(31)));

  auto other =
      link->Command({"EVAL", "return redis.error_reply('ERR no such thing')", "0"});
  REQUIRE(other.ok());
  CHECK(link.Failed(*other, "commit"));  // fails the round ...
  CHECK(link.refusal().empty());         // ... as a lost connection would

  t.server->Kill();
  REQUIRE_FALSE(link->Command({"PING"}).ok());
  const auto lost = RedisLink::Clock::now();
  link.Lost(lost);
  CHECK_FALSE(link.up());
  CHECK(link.down_s(lost + std::chrono::seconds(3)) == Approx(3.0));
  Status down = link.Reconnect();
  CHECK(down.code() == Status::Code::kIoError);
  CHECK_THAT(down.message(), Catch::Contains(t.address.Text()));
  CHECK_FALSE(link.up());
  t.server->Start();
  REQUIRE(link.Reconnect().ok());
  CHECK(link.up());
  CHECK(link.down_s(RedisLink::Clock::now()) == 0);
  CHECK(link->Command({"PING"}).ok());
}

TEST_CASE(
    "RedisLink::Retry: a failing step is run again after a reconnect with back-off; "
    "stopped, it names what it was doing",
    "[engine][cluster]") {
  LinkFixture t;
  RedisLink link = t.Link();
  std::atomic<bool> stop{false};
  int runs = 0, reconnects = 0;
  Status st = link.Retry(
      stop, "counting", [&] { return ++runs == 3; }, [&] { ++reconnects; });
  CHECK(st.ok());
  CHECK(runs == 3);
  CHECK(reconnects == 2);  // the connection is dropped after each failure
  CHECK(link.up());

  // Down from the start (a join's connection lost): connected, then run.
  RedisLink cold(t.address, nullptr);
  runs = 0;
  reconnects = 0;
  REQUIRE(cold.Retry(
                  stop, "starting", [&] { return ++runs == 1; }, [&] { ++reconnects; })
              .ok());
  CHECK(runs == 1);
  CHECK(reconnects == 1);

  stop = true;
  Status stopped = link.Retry(
      stop, "waiting for the job to start", [] { return false; }, [] {});
  CHECK(stopped.code() == Status::Code::kIoError);
  CHECK_THAT(stopped.message(), Catch::Contains("stopped while waiting for the job"));
}

}  // namespace
}  // namespace crawler::cluster
