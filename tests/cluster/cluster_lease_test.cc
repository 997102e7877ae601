// The lease and fencing protocol (cluster_wire.h: kLeaseScript, kAckScript,
// kCommitScript, kReleaseScript), run by a real redis-server: who may take,
// renew and lose a shard's lease, and that an acknowledge, trim or commit
// with a stale epoch is refused and changes nothing; and work-aware
// placement's scripts (kAliveScript's load, kMembersScript, kGiveScript).
// The nodes' use of it is tested with the real binary in cluster_test.cc.
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "cluster/exchange/receiver.h"
#include "cluster/exchange/sender.h"
#include "cluster/handoff/give_script.h"
#include "cluster/membership/commits.h"
#include "cluster/membership/heartbeats.h"
#include "cluster/membership/leases.h"
#include "cluster/membership/membership.h"
#include "cluster/membership/shard_owners.h"
#include "cluster/redis/cluster_wire.h"
#include "cluster/redis/redis.h"
#include "redis_server.h"
#include "run_command.h"

namespace crawler::cluster {
namespace {

using testing::CommandResult;
using testing::RedisServer;
using testing::RunCommand;
using testing::TempDir;

const std::string kPrefix = "crawler:{lease}:";

struct Answer {
  std::string state, epoch, holder, source, source_prev;
};

// A test's own redis-server (in TempDir(name)) and a connection to it.
class Protocol {
 public:
  explicit Protocol(const std::string& name) : server(TempDir(name) + "/redis") {
    auto address = ParseRedisUrl(server.Url());
    REQUIRE(address.ok());
    auto r = Redis::Connect(*address, 5);
    REQUIRE(r.ok());
    redis_ = std::move(r).value();
  }

  // Shard `shard`'s stream, with its group "owners".
  std::string Stream(uint32_t shard) {
    const std::string stream = kPrefix + "s:" + std::to_string(shard);
    Run({"XGROUP", "CREATE", stream, "owners", "0", "MKSTREAM"});
    return stream;
  }

  RedisReply Run(const std::vector<std::string>& cmd) {
    auto r = redis_->Command(cmd);
    REQUIRE(r.ok());
    INFO(r->Str());
    REQUIRE_FALSE(r->IsError());
    return std::move(r).value();
  }

  struct Received {
    std::string bell;
    size_t entries = 0;
  };
  // kReceiveScript over one stream of shard `shard`, as `node` with `epoch`.
  Received Read(const std::string& stream, uint32_t shard, const std::string& node,
                const std::string& epoch) {
    RedisReply r =
        Run({"EVAL", cluster_wire::kReceiveScript, "7", kPrefix + "state",
             kPrefix + "delivered", kPrefix + "bell:" + node, kPrefix + "busy",
             kPrefix + "assign_v", stream, kPrefix + "lease:" + std::to_string(shard),
             node, "64", node + " " + epoch});
    return {r[0].str(), r[1][0][1].size()};
  }

  // kLeaseScript for one shard: `node` holding `mine` (0: none).
  Answer Lease(uint32_t shard, const std::string& node, uint64_t mine, int ttl_ms,
               bool takeover = false) {
    std::string s = std::to_string(shard);
    RedisReply r = Run({"EVAL", cluster_wire::kLeaseScript, "8", kPrefix + "lease:" + s,
                        kPrefix + "epoch:" + s, kPrefix + "holder", kPrefix + "source",
                        kPrefix + "state", kPrefix + "holds", kPrefix + "busy",
                        kPrefix + "source_prev", node, std::to_string(ttl_ms),
                        takeover ? "1" : "0", std::to_string(mine)});
    const ReplyView one = r[0];
    return Answer{one[0].str(), one[1].str(), one[2].str(), one[3].str(), one[4].str()};
  }

  // kCommitScript: `node` commits checkpoint `seq` holding {shard, epoch}...;
  // `from`: by shard, where its state came from if the node's checkpoint
  // before this one lacks it.
  std::string Commit(const std::string& node, uint64_t seq,
                     const std::vector<std::pair<uint32_t, uint64_t>>& shards,
                     const std::map<uint32_t, std::string>& from = {}) {
    std::vector<std::string> cmd = {"EVAL",
                                    cluster_wire::kCommitScript,
                                    "4",
                                    kPrefix + "holder",
                                    kPrefix + "source",
                                    kPrefix + "commits",
                                    kPrefix + "source_prev",
                                    node,
                                    std::to_string(seq)};
    for (const auto& [s, e] : shards) {
      cmd.push_back(std::to_string(s) + " " + std::to_string(e));
      if (from.count(s) > 0) cmd.back() += " " + from.at(s);
    }
    return Run(cmd)[0].str();
  }
  std::string Get(const std::string& key) { return Run({"GET", kPrefix + key}).Str(); }
  std::string HGet(const std::string& key, const std::string& field) {
    return Run({"HGET", kPrefix + key, field}).Str();
  }

  // kAckScript: {verdict, detail}.
  std::pair<std::string, std::string> Ack(uint32_t shard, const std::string& lease,
                                          const std::string& id) {
    std::string s = std::to_string(shard);
    cluster_wire::StreamId next = cluster_wire::ParseStreamId(id);
    ++next.second;  // the trim point when nothing is left pending
    RedisReply r =
        Run({"EVAL", cluster_wire::kAckScript, "2", kPrefix + "s:" + s,
             kPrefix + "lease:" + s, lease,
             std::to_string(next.first) + "-" + std::to_string(next.second), id});
    return {r[0].str(), r[1].str()};
  }

  long long Int(const std::vector<std::string>& cmd) { return Run(cmd).Int(); }
  long long Pending(uint32_t shard) {
    RedisReply r = Run({"XPENDING", kPrefix + "s:" + std::to_string(shard), "owners"});
    return r[0].integer().value_or(-1);
  }

  RedisServer server;

 private:
  std::unique_ptr<Redis> redis_;
};

void WaitPast(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms + 100));
}

TEST_CASE("Leases: take, renew, expire; a stale epoch cannot acknowledge or trim",
          "[cluster][lease]") {
  Protocol p("cluster_lease");
  const std::string stream = p.Stream(0);
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(p.Run({"XADD", stream, "*", "z", "x"}).Str());
  p.Run({"XREADGROUP", "GROUP", "owners", "a", "STREAMS", stream, ">"});
  REQUIRE(p.Pending(0) == 3);

  Answer a = p.Lease(0, "a", 0, 400);
  CHECK(a.state == "taken");
  CHECK(a.epoch == "1");
  CHECK(p.Lease(0, "a", 1, 400).state == "held");  // renewed
  Answer b = p.Lease(0, "b", 0, 400, /*takeover=*/true);
  CHECK(b.state == "other");  // a live lease is never taken over
  CHECK(b.holder == "a 1");

  // The holder acknowledges the first entry: trimmed up to the oldest pending.
  CHECK(p.Ack(0, "a 1", ids[0]) == std::make_pair(std::string("ok"), std::string("2")));
  CHECK(p.Int({"XLEN", stream}) == 2);

  WaitPast(400);                                      // a paused past its TTL
  CHECK(p.Lease(0, "b", 0, 400).state == "waiting");  // a held it last: not b's to take
  p.Run({"HSET", kPrefix + "state", "b", "idle"});
  b = p.Lease(0, "b", 0, 5000, /*takeover=*/true);
  CHECK(b.state == "taken");
  CHECK(b.epoch == "2");
  // The taker is busy at once, in the same script: the end test cannot see
  // its "idle" of before while it loads the shard.
  CHECK(p.Run({"HGET", kPrefix + "state", "b"}).Str() == "busy");

  // a wakes up (a zombie): its acknowledge is refused and changes nothing.
  auto refused = p.Ack(0, "a 1", ids[1]);
  CHECK(refused.first == "fenced");
  CHECK(refused.second == "b 2");
  CHECK(p.Pending(0) == 2);
  CHECK(p.Int({"XLEN", stream}) == 2);
  Answer zombie = p.Lease(0, "a", 1, 400);
  CHECK(zombie.state == "other");
  CHECK(zombie.holder == "b 2");
  CHECK(p.Int({"PTTL", kPrefix + "lease:0"}) > 1000);  // b's lease untouched
  // The new holder may.
  CHECK(p.Ack(0, "b 2", ids[1]).first == "ok");
  CHECK(p.Pending(0) == 1);

  // b restarted (a new process, no epoch yet) takes its own name's lease;
  // the old process, if it is still running, cannot take it back.
  Answer b2 = p.Lease(0, "b", 0, 5000);
  CHECK(b2.state == "taken");
  CHECK(b2.epoch == "3");
  CHECK(p.Lease(0, "b", 2, 5000).state == "other");
  CHECK(p.Ack(0, "b 2", ids[2]).first == "fenced");
  CHECK(p.Ack(0, "b 3", ids[2]).first == "ok");
  CHECK(p.Int({"XLEN", stream}) == 0);

  // An expired lease nobody else took: its holder takes it again (a new
  // epoch); one another node took meanwhile is not.
  CHECK(p.Lease(1, "a", 0, 300).epoch == "1");
  WaitPast(300);
  Answer again = p.Lease(1, "a", 1, 300);
  CHECK(again.state == "taken");
  CHECK(again.epoch == "2");
  WaitPast(300);
  CHECK(p.Lease(1, "c", 0, 300, /*takeover=*/true).epoch == "3");
  WaitPast(300);
  Answer lost = p.Lease(1, "a", 2, 300);
  CHECK(lost.state == "waiting");
  CHECK(lost.holder == "c 3");
  CHECK(p.Int({"GET", kPrefix + "epoch:1"}) == 3);  // epochs only grow
}

TEST_CASE(
    "Acknowledgements out of order: with none pending, no entry delivered stays in "
    "the stream",
    "[cluster][lease]") {
  // A taker acknowledges the entries it claimed from a dead owner after newer
  // ones; an acknowledged entry left in the stream would count as lag (XLEN -
  // pending) for ever.
  Protocol p("cluster_ack_order");
  const std::string stream = p.Stream(0);
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(p.Run({"XADD", stream, "*", "z", "x"}).Str());
  // The dead owner "a" read the first two; the taker "b" claims them and
  // reads the other two.
  p.Run({"XREADGROUP", "GROUP", "owners", "a", "COUNT", "2", "STREAMS", stream, ">"});
  p.Run({"XREADGROUP", "GROUP", "owners", "b", "STREAMS", stream, ">"});
  p.Run({"XAUTOCLAIM", stream, "owners", "b", "0", "0-0"});
  REQUIRE(p.Lease(0, "b", 0, 5000).epoch == "1");
  // The newer entries first: the claimed ones are still pending, nothing goes.
  CHECK(p.Ack(0, "b 1", ids[3]).second == "3");
  CHECK(p.Ack(0, "b 1", ids[2]).second == "2");
  CHECK(p.Int({"XLEN", stream}) == 4);
  // Then the claimed ones (this call's own trim point is ids[1] + 1): every
  // entry delivered is acknowledged now, and all of them go.
  CHECK(p.Ack(0, "b 1", ids[0]).second == "1");
  CHECK(p.Ack(0, "b 1", ids[1]).second == "0");
  CHECK(p.Int({"XLEN", stream}) == 0);
  // Entries nobody read yet stay (they are the lag).
  std::string unread = p.Run({"XADD", stream, "*", "z", "x"}).Str();
  CHECK(p.Int({"XLEN", stream}) == 1);
  CHECK(p.Pending(0) == 0);
  CHECK_FALSE(unread.empty());
}

TEST_CASE(
    "Commits: a checkpoint becomes its shards' source only while its node holds them "
    "with that epoch; takeover only without an epoch; release gives a lease up; "
    "source_prev names where a first committer got a shard, until its checkpoint before "
    "holds it",
    "[cluster][lease]") {
  Protocol p("cluster_commit");
  CHECK(p.Lease(0, "a", 0, 400).epoch == "1");
  CHECK(p.Lease(1, "a", 0, 400).epoch == "1");
  CHECK(p.Lease(0, "a", 1, 400).source.empty());  // nothing committed yet
  CHECK(p.Commit("a", 5, {{0, 1}, {1, 1}}) == "ok");
  CHECK(p.HGet("source", "0") == "a 5");
  CHECK(p.HGet("commits", "a") == "5");

  WaitPast(400);  // a paused: b (no epoch of shard 0) takes it over, and learns
                  // where from
  Answer b = p.Lease(0, "b", 0, 5000, /*takeover=*/true);
  CHECK(b.state == "taken");
  CHECK(b.source == "a 5");
  // a's next commit holds shard 0 at epoch 1: refused, and nothing changes
  // (shard 1's source neither, though a still holds it).
  CHECK(p.Commit("a", 6, {{0, 1}, {1, 1}}) == "fenced");
  CHECK(p.HGet("source", "1") == "a 5");
  CHECK(p.HGet("commits", "a") == "5");
  // a, with its epoch, may not take it back even with takeover (it is a
  // running process that lost it), nor commit with b's epoch.
  CHECK(p.Lease(0, "a", 1, 400, /*takeover=*/true).state == "other");
  CHECK(p.Commit("a", 6, {{0, 2}}) == "fenced");
  // b's checkpoint 1 is the first of its to hold shard 0, loaded from "a 5".
  CHECK(p.Commit("b", 1, {{0, 2}}, {{0, "a 5"}}) == "ok");
  CHECK(p.HGet("source", "0") == "b 1");
  CHECK(p.HGet("source_prev", "0") == "a 5");
  CHECK(p.Lease(0, "b", 2, 5000).source_prev.empty());  // told only at a taking

  // b leaves: a stale value releases nothing; its own does; the holder hash
  // keeps its name (the shard is taken over from its last commit).
  auto release = [&](const std::string& value) {
    return p.Run({"EVAL", cluster_wire::kReleaseScript, "1", kPrefix + "lease:0", value})
        .Int();
  };
  CHECK(release("b 1") == 0);
  CHECK(release("b 2") == 1);
  CHECK(p.Int({"EXISTS", kPrefix + "lease:0"}) == 0);
  CHECK(p.HGet("holder", "0") == "b 2");
  Answer c = p.Lease(0, "c", 0, 5000, /*takeover=*/true);
  CHECK(c.state == "taken");
  CHECK(c.source == "b 1");
  // Should "b 1" be damaged, b's checkpoint before it lacks the shard: c
  // loads it from "a 5" instead (Cluster::LoadElsewhere).
  CHECK(c.source_prev == "a 5");
  CHECK(p.Commit("c", 7, {{0, 3}}, {{0, "b 1"}}) == "ok");
  CHECK(p.HGet("source_prev", "0") == "b 1");
  // c's next commit: its checkpoint before (7) holds the shard.
  CHECK(p.Commit("c", 8, {{0, 3}}) == "ok");
  CHECK(p.Int({"HEXISTS", kPrefix + "source_prev", "0"}) == 0);
  CHECK(p.HGet("source", "0") == "c 8");
}

// Calls of COMMAND (lower case) so far, from INFO commandstats.
long Calls(Protocol& p, const std::string& command) {
  std::string info = p.Run({"INFO", "commandstats"}).Str();
  std::string key = "cmdstat_" + command + ":calls=";
  size_t at = info.find(key);
  return at == std::string::npos ? 0 : std::atol(info.c_str() + at + key.size());
}

TEST_CASE(
    "Scripts go once per connection (SCRIPT LOAD, then EVALSHA); NOSCRIPT after a "
    "flush loads them again, for a command and in a pipeline",
    "[cluster][redis]") {
  Protocol p("cluster_scripts");
  const std::string script = "return tonumber(ARGV[1]) + 1";
  for (int i = 0; i < 3; ++i)
    CHECK(p.Run({"EVAL", script, "0", std::to_string(i)}).Int() == i + 1);
  CHECK(Calls(p, "eval") == 0);
  CHECK(Calls(p, "evalsha") == 3);
  CHECK(Calls(p, "script|load") == 1);
  // The server forgets its scripts: the next call is answered all the same.
  p.Run({"SCRIPT", "FLUSH"});
  CHECK(p.Run({"EVAL", script, "0", "41"}).Int() == 42);
  CHECK(Calls(p, "script|load") == 2);
  p.Run({"SCRIPT", "FLUSH"});
  auto address = ParseRedisUrl(p.server.Url());
  REQUIRE(address.ok());
  auto other = Redis::Connect(*address, 5);  // loads it on its own connection
  REQUIRE(other.ok());
  auto replies = (*other)->Pipeline(
      {{"EVAL", script, "0", "1"}, {"PING"}, {"EVAL", script, "0", "2"}});
  REQUIRE(replies.ok());
  CHECK((*replies)[0].Int() == 2);
  CHECK((*replies)[1].Str() == "PONG");
  CHECK((*replies)[2].Int() == 3);
  // After a flush its connection still believes the script loaded: NOSCRIPT,
  // reloaded, answered.
  p.Run({"SCRIPT", "FLUSH"});
  replies = (*other)->Pipeline({{"EVAL", script, "0", "5"}, {"EVAL", script, "0", "6"}});
  REQUIRE(replies.ok());
  CHECK((*replies)[0].Int() == 6);
  CHECK((*replies)[1].Int() == 7);
  CHECK(Calls(p, "eval") == 0);
}

TEST_CASE(
    "End test: a dead node holding shards keeps the job open, counted in holds (no walk "
    "over the shards); once every shard is taken from it, the job is done",
    "[cluster][lease]") {
  Protocol p("cluster_done");
  // a takes shards 1 and 2, b shard 3; a's leases lapse (a died).
  CHECK(p.Lease(1, "a", 0, 300).state == "taken");
  CHECK(p.Lease(2, "a", 0, 300).state == "taken");
  CHECK(p.Lease(3, "b", 0, 60000).state == "taken");
  auto count = [&](const std::string& node) {
    return p.Run({"HGET", kPrefix + "holds", node}).Int();
  };
  CHECK(count("a") == 2);
  CHECK(count("b") == 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  p.Run({"SET", kPrefix + "alive:b", "1"});  // b lives; a's key is gone
  p.Run({"HSET", kPrefix + "state", "b", "idle"});
  auto done = [&] {
    return p
        .Run({"EVAL", cluster_wire::kDoneScript, "8", kPrefix + "state", kPrefix + "sent",
              kPrefix + "delivered", kPrefix + "done", kPrefix + "holder",
              kPrefix + "holds", kPrefix + "alive:a", kPrefix + "alive:b", "1", "a", "b"})
        .Int();
  };
  CHECK(done() == 0);  // a is the last holder of 2 shards: they wait for a taker
  CHECK(p.Lease(1, "b", 0, 60000, /*takeover=*/true).state == "taken");
  CHECK(count("a") == 1);
  CHECK(done() == 0);
  CHECK(p.Lease(2, "b", 0, 60000, /*takeover=*/true).state == "taken");
  CHECK(count("a") == 0);
  CHECK(count("b") == 3);
  CHECK(done() == 0);  // a taker is busy until it has loaded (the lease script)
  p.Run({"HSET", kPrefix + "state", "b", "idle"});
  CHECK(done() == 1);
  // A job from before holds existed: the holder hash is walked instead.
  p.Run({"DEL", kPrefix + "done", kPrefix + "holds"});
  p.Run({"HSET", kPrefix + "holder", "9", "a 1"});
  CHECK(done() == 0);
  p.Run({"HSET", kPrefix + "holder", "9", "b 2"});
  CHECK(done() == 1);
}

TEST_CASE(
    "Reads are fenced: a node reads a shard's stream only with its lease and epoch; a "
    "late read of a node that lost it takes nothing and leaves nothing pending",
    "[cluster][lease]") {
  Protocol p("cluster_read_fence");
  const std::string stream = p.Stream(4);
  p.Run({"XADD", stream, "*", "b", "1"});
  CHECK(p.Lease(4, "a", 0, 300).state == "taken");  // a: epoch 1
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  CHECK(p.Lease(4, "b", 0, 60000, /*takeover=*/true).state == "taken");  // b: epoch 2
  auto read = [&](const std::string& node, const std::string& epoch) {
    return p.Read(stream, 4, node, epoch).entries;
  };
  auto pending = [&] {
    return p.Run({"XPENDING", stream, "owners"})[0].integer().value_or(-1);
  };
  CHECK(read("a", "1") == 0);  // a's read, late: fenced
  CHECK(pending() == 0);
  CHECK(p.Run({"GET", kPrefix + "delivered"}).IsNil());  // nothing counted
  CHECK(read("b", "2") == 1);                            // the holder reads it
  CHECK(pending() == 1);
  CHECK(p.Run({"GET", kPrefix + "delivered"}).Int() == 1);
}

TEST_CASE(
    "Doorbell: a send rings its shard's lease holder's bell, which the receive returns; "
    "a send to a shard with no lease rings none",
    "[cluster][lease]") {
  Protocol p("cluster_bell");
  const std::string stream = p.Stream(5);
  auto send = [&] {
    p.Run({"EVAL", cluster_wire::kSendScript, "3", stream, kPrefix + "sent",
           kPrefix + "lease:5", "payload", "1", "7", "x", kPrefix + "bell:"});
  };
  send();  // no lease yet: no bell
  CHECK(p.Run({"KEYS", kPrefix + "bell:*"}).view().size() == 0);
  CHECK(p.Lease(5, "a", 0, 60000).state == "taken");  // a: epoch 1
  Protocol::Received first = p.Read(stream, 5, "a", "1");
  CHECK(first.bell == "0");
  CHECK(first.entries == 1);  // what came before the lease: read all the same
  CHECK(p.Run({"SISMEMBER", kPrefix + "busy", "a"}).Int() == 1);
  send();
  send();
  CHECK(p.Run({"GET", kPrefix + "bell:a"}).Int() == 2);
  Protocol::Received second = p.Read(stream, 5, "a", "1");
  CHECK(second.bell == "2");
  CHECK(second.entries == 2);
  CHECK(p.Read(stream, 5, "a", "1").entries == 0);  // nothing new, bell unchanged
}

TEST_CASE(
    "End test's first look: 0 while a live node is busy or a batch is unread, 2 (the "
    "full test decides) when it cannot tell, 1 once done",
    "[cluster][lease]") {
  Protocol p("cluster_done_hint");
  auto state = [&](const std::string& node, const std::string& v) {
    p.Run({"EVAL", cluster_wire::kStateScript, "2", kPrefix + "state", kPrefix + "busy",
           node, v});
  };
  auto hint = [&] {
    return p
        .Run({"EVAL", cluster_wire::kDoneHintScript, "4", kPrefix + "done",
              kPrefix + "sent", kPrefix + "delivered", kPrefix + "busy",
              kPrefix + "alive:"})
        .Int();
  };
  p.Run({"SET", kPrefix + "alive:a", "1"});
  state("a", "busy");
  state("b", "idle");
  CHECK(hint() == 0);  // a lives and is busy
  state("a", "idle");
  CHECK(p.Run({"SCARD", kPrefix + "busy"}).Int() == 0);
  CHECK(hint() == 2);
  p.Run({"SET", kPrefix + "sent", "3"});
  CHECK(hint() == 0);  // a batch sent and not read
  p.Run({"SET", kPrefix + "delivered", "3"});
  state("b", "busy");  // b is busy, and dead: only the full test knows
  CHECK(hint() == 2);
  p.Run({"SET", kPrefix + "done", "1"});
  CHECK(hint() == 1);
}

TEST_CASE(
    "Reclaim: entries pending for another consumer past the idle time become the lease "
    "holder's; its own pending are left; without the lease it takes nothing",
    "[cluster][lease]") {
  Protocol p("cluster_reclaim_script");
  const std::string stream = p.Stream(6);
  for (int i = 0; i < 3; ++i) p.Run({"XADD", stream, "*", "b", std::to_string(i)});
  // ghost read two entries and is gone; a read the third.
  p.Run({"XREADGROUP", "GROUP", "owners", "ghost", "COUNT", "2", "STREAMS", stream, ">"});
  p.Run({"XREADGROUP", "GROUP", "owners", "a", "COUNT", "1", "STREAMS", stream, ">"});
  CHECK(p.Lease(6, "a", 0, 60000).state == "taken");  // a: epoch 1
  auto reclaim = [&](const std::string& node, const std::string& epoch) {
    RedisReply r = p.Run({"EVAL", cluster_wire::kReclaimScript, "2", stream,
                          kPrefix + "lease:6", node, "300", "100", node + " " + epoch});
    return r[0][1].size();
  };
  CHECK(reclaim("a", "1") == 0);  // not idle long enough yet
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  CHECK(reclaim("b", "1") == 0);  // no lease: fenced
  CHECK(reclaim("a", "1") == 2);  // ghost's two; a's own one stays as it is
  auto pending_of = [&](const std::string& node) {
    return p.Run({"XPENDING", stream, "owners", "-", "+", "10", node}).view().size();
  };
  CHECK(pending_of("a") == 3);
  CHECK(pending_of("ghost") == 0);
  CHECK(reclaim("a", "1") == 0);  // nothing left for anyone else
}

TEST_CASE(
    "Balance scripts: the members read names the least loaded live node, not the "
    "caller's, not reserved; a give lands only on a taker whose load is published and "
    "within the bound, and only with leases the giver holds",
    "[cluster][lease][balance]") {
  Protocol p("cluster_balance_script");
  // The heartbeat's kAliveScript: alive for 60 s, figures, the load.
  auto beat = [&](const std::string& node, const std::string& load) {
    p.Run({"EVAL", cluster_wire::kAliveScript, "3", kPrefix + "alive:" + node,
           kPrefix + "stats", kPrefix + "load", "t-" + node, "60000", node, "{}", load});
  };
  for (const char* n : {"n1", "n2", "n3", "n4"}) p.Run({"SADD", kPrefix + "nodes", n});
  beat("n1", "900");
  beat("n2", "300");
  beat("n3", "100");
  beat("n4", "0");
  p.Run({"DEL", kPrefix + "alive:n4"});  // n4 died idle
  auto least = [&](const std::string& caller) {
    RedisReply r = p.Run({"EVAL", cluster_wire::kMembersScript, "4", kPrefix + "nodes",
                          kPrefix + "assign_v", kPrefix + "assign", kPrefix + "load",
                          kPrefix + "alive:", "-", "1", caller, kPrefix + "reserve:"});
    const ReplyView l = r[4];
    if (!l.array()) return std::string("none");
    return l[0].str() + "=" + l[1].str();
  };
  CHECK(least("n1") == "n3=100");
  CHECK(p.Run({"ZSCORE", kPrefix + "load", "n4"}).IsNil());  // the dead one's removed
  CHECK(least("n3") == "n2=300");                            // never the caller
  p.Run({"SET", kPrefix + "reserve:n3", "1"});
  CHECK(least("n1") == "n2=300");  // n3 reserved by another giver
  beat("n2", "-");                 // n2 is taking shards: no taker now
  CHECK(least("n1") == "none");    // n1 is the caller, n3 reserved
  p.Run({"DEL", kPrefix + "reserve:n3"});

  // n1 holds shards 5 and 6 (epoch 1 each); it gives 5 and 6 to n3, but
  // names a stale epoch for 6.
  CHECK(p.Lease(5, "n1", 0, 60000).epoch == "1");
  CHECK(p.Lease(6, "n1", 0, 60000).epoch == "1");
  auto give = [&](const std::string& to, const std::string& max_load) {
    RedisReply r = p.Run({"EVAL", cluster_wire::kGiveScript, "7", kPrefix + "assign",
                          kPrefix + "assign_v", kPrefix + "reserve:" + to,
                          kPrefix + "alive:" + to, kPrefix + "load", kPrefix + "lease:5",
                          kPrefix + "lease:6", to, "60000", max_load, "n1 1", "n1 0"});
    std::string given;
    for (const std::string& shard : r.view().strings()) given += shard + ";";
    return given;
  };
  CHECK(give("n3", "50").empty());  // its load (100) grew past what pays
  CHECK(p.Int({"EXISTS", kPrefix + "reserve:n3"}) == 0);  // and nothing reserved
  CHECK(give("n2", "500").empty());                       // n2 publishes no load
  CHECK(give("n4", "500").empty());                       // dead
  CHECK(give("n3", "675") == "5;");                       // 6: not with that epoch
  CHECK(p.Run({"HGET", kPrefix + "assign", "5"}).Str() == "n3");
  CHECK(p.Run({"HGET", kPrefix + "assign", "6"}).IsNil());
  CHECK(p.Run({"GET", kPrefix + "assign_v"}).Str() == "1");
  CHECK(give("n3", "675").empty());  // reserved by this give for its TTL

  // crawler cluster-stats counts shard 5 as n3's (it is live), besides the
  // shards the placement gives it over the job's nodes.
  p.Run({"HSET", kPrefix + "meta", "shards", "8", "weights", ""});
  const std::vector<std::string> nodes = {"n1", "n2", "n3", "n4"};
  const std::vector<uint32_t> placed = PlaceShards(nodes, std::vector<uint32_t>(8, 0), 8);
  uint64_t n3_shards = placed[5] == 2 ? 0 : 1;
  for (uint32_t owner : placed) n3_shards += owner == 2;
  CommandResult stats = RunCommand(std::string(CRAWLER_BINARY) + " cluster-stats " +
                                   p.server.Url() + " --job lease --json");
  INFO(stats.output);
  REQUIRE(stats.exit_code == 0);
  const boost::json::value report = boost::json::parse(stats.output);
  for (const auto& n : report.at("nodes").as_array())
    if (n.at("node").as_string() == "n3")
      CHECK(n.at("shards").to_number<uint64_t>() == n3_shards);
}

}  // namespace
}  // namespace crawler::cluster
