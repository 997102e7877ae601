// The receiving side of a node's exchange (cluster/exchange/receiver.h) against a
// real redis-server, without a crawl, fed by a real Sender: new entries of
// the shards whose lease this node holds go to the inbox (another node's
// shard gives nothing), each URL once; a dead consumer's pending entries,
// claimed, are read a chunk a round and every one arrives; a shard no
// longer held leaves that reading; a read whose reply is lost queues its
// shards to be claimed again (the node is not quiet); a resumed node reads
// its own pending entries again; a group deleted by hand is made again.
// (The doorbell's and the inbox's rules: cluster_parts_test.cc and
// cluster_inbox_test.cc; the reclaim script: "Reclaim: *".)
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "cluster/exchange/receiver.h"
#include "cluster/exchange/sender.h"
#include "cluster/redis/redis.h"
#include "redis_server.h"

namespace crawler::cluster {
namespace {

struct ReceiverFixture {
  testing::ScratchRedis scratch{"receiver-test"};
  const std::string dir = scratch.dir();
  testing::RedisServer* server = &scratch.server();
  std::unique_ptr<Redis> redis;
  engine::ClusterConfig cfg;
  std::vector<std::string> failures;  // what ReplyFailed was given

  ReceiverFixture() {
    redis = Connect();
    cfg.node = "n1";
    cfg.shards = 4;
    cfg.batch_urls = 2;
    cfg.batch_ms = 1;
    for (uint32_t s = 0; s < 4; ++s)
      REQUIRE(Ok({"XGROUP", "CREATE", Key("s:" + std::to_string(s)), "owners", "0",
                  "MKSTREAM"}));
    // n1 holds shards 0-2 (epoch 2); n9 holds shard 3.
    for (uint32_t s = 0; s < 3; ++s)
      REQUIRE(Ok({"SET", Key("lease:" + std::to_string(s)), "n1 2"}));
    REQUIRE(Ok({"SET", Key("lease:3"), "n9 5"}));
  }
  std::unique_ptr<Redis> Connect() {
    auto address = ParseRedisUrl(server->Url());
    REQUIRE(address.ok());
    auto r = Redis::Connect(*address, 5);
    REQUIRE(r.ok());
    return std::move(r).value();
  }
  static std::string Key(const std::string& suffix) { return "crawler:{t}:" + suffix; }
  bool Ok(const std::vector<std::string>& cmd) {
    auto r = redis->Command(cmd);
    return r.ok() && !r->IsError();
  }
  std::unique_ptr<Receiver> MakeReceiver() {
    return std::make_unique<Receiver>(
        cfg, Key, [this](const RedisReply& r, const char* what) {
          failures.push_back(std::string(what) + ": " + r.Str());
          return true;
        });
  }
  // `n` URLs of `shard`'s host sent through a real Sender (one stream entry
  // per 2 URLs).
  void Send(uint32_t shard, int n, int from) {
    Sender sender(cfg, Key, dir + "/out");
    std::vector<frontier::UrlEntry> urls;
    for (int i = from; i < from + n; ++i) {
      frontier::UrlEntry e;
      e.url = "http://h" + std::to_string(shard) + ".test/" + std::to_string(i);
      urls.push_back(e);
    }
    sender.Ship(urls, [](std::string_view host_key) {
      return static_cast<uint32_t>(host_key[8] - '0');  // "http://hN.test"
    });
    bool did = false;
    for (int i = 0; i < 100 && !sender.Quiet(); ++i) {
      REQUIRE(sender.SendDue(*redis, true, &did));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    REQUIRE(sender.Quiet());
  }
  // The URLs taken from `receiver`, admitted, counted into `seen`.
  static size_t TakeInto(Receiver& receiver, std::map<std::string, int>* seen) {
    std::vector<frontier::UrlEntry> got = receiver.Take();
    for (const auto& e : got) ++(*seen)[e.url];
    receiver.Admitted();
    return got.size();
  }
  long long Pending(uint32_t shard) {
    auto r = redis->Command({"XPENDING", Key("s:" + std::to_string(shard)), "owners"});
    REQUIRE(r.ok());
    return (*r)[0].integer().value_or(-1);
  }
};

TEST_CASE(
    "Receiver: new entries of the shards held come in once, another node's shard gives "
    "nothing; a lost reply leaves the node not quiet until its shards are claimed again",
    "[engine][cluster]") {
  ReceiverFixture t;
  t.Send(0, 6, 0);
  t.Send(1, 4, 0);
  t.Send(3, 4, 0);  // n9's shard
  auto receiver = t.MakeReceiver();
  CHECK(receiver->Quiet());
  const Receiver::Shards mine = {{0, 2}, {1, 2}, {3, 5}};
  bool did = false;
  size_t got = 0;
  REQUIRE(receiver->ReadNew(*t.redis, mine, &did, &got));
  CHECK(did);
  CHECK(got == 5);  // 3 entries of shard 0, 2 of shard 1; shard 3's lease is n9's
  CHECK_FALSE(receiver->Quiet());
  std::map<std::string, int> seen;
  CHECK(ReceiverFixture::TakeInto(*receiver, &seen) == 10);
  CHECK(receiver->Quiet());
  report::ClusterReport f;
  receiver->Report(&f);
  CHECK(f.urls_received == 10);
  CHECK(f.batches_applied == 5);
  CHECK(t.Pending(3) == 0);
  auto delivered = t.redis->Command({"GET", ReceiverFixture::Key("delivered")});
  REQUIRE(delivered.ok());
  CHECK(delivered->Int() == 5);

  // Sent again: the bell rang (the send script rings the lease holder's),
  // so a read within a few rounds takes it; nothing is read twice.
  t.Send(1, 2, 100);
  for (int i = 0; i < 50 && seen.size() < 12; ++i) {
    REQUIRE(receiver->ReadNew(*t.redis, mine, &did, &got));
    ReceiverFixture::TakeInto(*receiver, &seen);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(seen.size() == 12);
  for (const auto& [url, n] : seen) CHECK(n == 1);

  // The placement's version comes with the reads and looks: a give (or any
  // change of owners) is seen within a round, not at the next heartbeat.
  CHECK(receiver->assign_seen() == "0");
  REQUIRE(t.redis->Command({"SET", ReceiverFixture::Key("assign_v"), "7"}).ok());
  for (int i = 0; i < 50 && receiver->assign_seen() != "7"; ++i) {
    REQUIRE(receiver->ReadNew(*t.redis, mine, &did, &got));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(receiver->assign_seen() == "7");

  // The ledger: after a cut and its commit (the job's last), every entry
  // read is to be acknowledged.
  receiver->Cut(1);
  receiver->Committed(1, /*last=*/true);
  CHECK(receiver->committed() == 1);
  CHECK(receiver->TakeAcks().size() == 6);

  // Redis goes away under a read: the shards read are claimed again
  // (entries it may have delivered stay pending for this node).
  t.Send(0, 2, 200);
  t.server->Kill();
  CHECK_FALSE(receiver->ReadNew(*t.redis, mine, &did, &got));
  CHECK_FALSE(receiver->Quiet());
  CHECK(t.failures.empty());
}

TEST_CASE(
    "Receiver: a dead consumer's pending entries, claimed, are read a chunk a round, "
    "each once; a shard no longer held leaves; a resumed node reads its own pending",
    "[engine][cluster]") {
  ReceiverFixture t;
  t.Send(2, 2 * 20, 0);  // 20 entries, more than a chunk (16)
  t.Send(1, 2 * 3, 0);
  // A consumer "ghost" read them all and died.
  for (uint32_t s : {1u, 2u})
    REQUIRE(t.Ok({"XREADGROUP", "GROUP", "owners", "ghost", "COUNT", "100", "STREAMS",
                  ReceiverFixture::Key("s:" + std::to_string(s)), ">"}));
  CHECK(t.Pending(2) == 20);
  auto receiver = t.MakeReceiver();
  receiver->Claim(2);
  receiver->Claim(2);  // queued twice: claimed once
  receiver->Claim(1);
  CHECK_FALSE(receiver->Quiet());
  auto all = [](const std::vector<uint32_t>& shards) {
    Receiver::Shards out;
    for (uint32_t s : shards) out.emplace_back(s, 2);
    return out;
  };
  bool shard1_held = false;  // shard 1 was given up meanwhile
  auto held = [&](uint32_t s) { return s != 1 || shard1_held; };
  std::map<std::string, int> seen;
  bool did = false;
  REQUIRE(receiver->ClaimAndRead(*t.redis, all, held, &did));
  CHECK(did);
  CHECK(ReceiverFixture::TakeInto(*receiver, &seen) == 2 * Receiver::kPendingChunk);
  CHECK_FALSE(receiver->Quiet());  // shard 2's reading goes on
  REQUIRE(receiver->ClaimAndRead(*t.redis, all, held, &did));
  CHECK(ReceiverFixture::TakeInto(*receiver, &seen) ==
        2 * (20 - Receiver::kPendingChunk));
  REQUIRE(receiver->ClaimAndRead(*t.redis, all, held, &did));  // none left: done
  CHECK(receiver->Quiet());
  CHECK(seen.size() == 40);
  for (const auto& [url, n] : seen) CHECK(n == 1);
  // Shard 1's entries were claimed (this node's now) but it was not held:
  // not read; its new owner claims them in turn.
  auto pending1 = t.redis->Command(
      {"XPENDING", ReceiverFixture::Key("s:1"), "owners", "-", "+", "10", "n1"});
  REQUIRE(pending1.ok());
  CHECK(pending1->view().size() == 3);

  // A resumed process of n1 (acknowledged nothing): its own pending
  // entries, all of them at once.
  auto resumed = t.MakeReceiver();
  REQUIRE(resumed->ReadOwnPending(*t.redis, {{1, 2}, {2, 2}}));
  std::map<std::string, int> again;
  CHECK(ReceiverFixture::TakeInto(*resumed, &again) == 46);

  // A group deleted by hand: made again (a read is not an error), and
  // entries added after that are read.
  REQUIRE(t.Ok({"XGROUP", "DESTROY", ReceiverFixture::Key("s:0"), "owners"}));
  REQUIRE(resumed->ReadOwnPending(*t.redis, {{0, 2}}));
  t.Send(0, 2, 300);
  size_t got = 0;
  REQUIRE(resumed->ReadNew(*t.redis, {{0, 2}}, &did, &got));
  CHECK(got == 1);
  CHECK(t.failures.empty());
}

}  // namespace
}  // namespace crawler::cluster
