// Membership of a node in a job (cluster/membership/membership.h), without Redis: the
// start's reply read, the job's nodes kept sorted, this node's state written
// only when it changes or Redis may have changed it, the end test's keys
// (one liveness key per node, the takeover flag), the leave. (Its scripts on
// a real redis-server: cluster_lease_test.cc; the join and its refusals:
// cluster_test.cc, "Cluster: refusals and faults name what is wrong*",
// "Cluster: Redis restarted empty*".)
#include <hiredis/hiredis.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "cluster/membership/membership.h"

namespace crawler::cluster {
namespace {

using Strings = std::vector<std::string>;

// A reply as hiredis builds it: an array of strings, or nil.
struct FakeReply {
  std::vector<redisReply> items;
  std::vector<redisReply*> ptrs;
  std::vector<std::string> texts;
  redisReply reply{};

  explicit FakeReply(const Strings& strings) : texts(strings) {
    items.resize(texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
      items[i] = redisReply{};
      items[i].type = REDIS_REPLY_STRING;
      items[i].str = texts[i].data();
      items[i].len = texts[i].size();
      ptrs.push_back(&items[i]);
    }
    reply.type = REDIS_REPLY_ARRAY;
    reply.elements = ptrs.size();
    reply.element = ptrs.data();
  }
};

TEST_CASE("Membership: the start read, and the job's nodes sorted", "[engine][cluster]") {
  Membership m("j1", "n2", 3, /*takeover=*/true);
  CHECK(m.Key("nodes") == "crawler:{j1}:nodes");
  const Strings start = m.StartCommand();
  REQUIRE(start.size() == 6);
  CHECK(start[3] == "crawler:{j1}:nodes");
  CHECK(start[4] == "crawler:{j1}:started");
  CHECK(start[5] == "3");  // cluster.min_nodes

  redisReply nil{};
  nil.type = REDIS_REPLY_NIL;
  CHECK_FALSE(m.Started(ReplyView(&nil)));  // not yet
  CHECK_FALSE(m.Started(ReplyView()));
  CHECK(m.nodes().empty());
  FakeReply three({"n3", "n1", "n2"});
  CHECK(m.Started(ReplyView(&three.reply)));
  CHECK(m.nodes() == Strings{"n1", "n2", "n3"});
  m.SetNodes({});  // a members read that did not say: kept
  CHECK(m.nodes() == Strings{"n1", "n2", "n3"});
  m.SetNodes({"n4", "n1", "n3", "n2"});  // n4 joined
  CHECK(m.nodes() == Strings{"n1", "n2", "n3", "n4"});
}

TEST_CASE(
    "Membership: this node's state is written when it changes, and again once Redis "
    "may have changed it",
    "[engine][cluster]") {
  Membership m("j", "a", 1, false);
  auto cmd = m.StateCommand(/*idle=*/false);
  REQUIRE(cmd);
  CHECK(cmd->back() == "busy");
  CHECK((*cmd)[5] == "a");
  CHECK(m.busy());
  m.StateWritten(true);
  CHECK_FALSE(m.StateCommand(false));  // Redis has it
  cmd = m.StateCommand(true);
  REQUIRE(cmd);
  CHECK(cmd->back() == "idle");
  CHECK_FALSE(m.busy());
  m.StateWritten(false);  // no answer: not known what Redis has
  REQUIRE(m.StateCommand(true));
  m.StateWritten(true);
  CHECK_FALSE(m.StateCommand(true));
  m.StateUnknown();  // a read marked this node busy in Redis
  REQUIRE(m.StateCommand(true));
  m.StateWritten(true);
  CHECK_FALSE(m.StateCommand(true));
}

TEST_CASE("Membership: the end test's keys, and the leave", "[engine][cluster]") {
  Membership m("j", "b", 2, /*takeover=*/true);
  FakeReply two({"b", "a"});
  REQUIRE(m.Started(ReplyView(&two.reply)));
  const Strings hint = m.DoneHintCommand();
  CHECK(hint[2] == "4");
  CHECK(hint.back() == "crawler:{j}:alive:");
  const Strings done = m.DoneCommand();
  // KEYS: state, sent, delivered, done, holder, holds, alive:a, alive:b;
  // ARGV: the takeover flag, the nodes.
  CHECK(done[2] == "8");
  CHECK(Strings(done.begin() + 9, done.end()) ==
        Strings{"crawler:{j}:alive:a", "crawler:{j}:alive:b", "1", "a", "b"});
  Membership plain("j", "b", 2, /*takeover=*/false);
  REQUIRE(plain.Started(ReplyView(&two.reply)));
  CHECK(plain.DoneCommand()[11] == "0");

  const auto leave = m.LeaveCommands({{4, "b 7"}, {9, "b 2"}});
  REQUIRE(leave.size() == 2);
  CHECK(leave[0][2] == "2");
  CHECK(Strings(leave[0].begin() + 3, leave[0].end()) ==
        Strings{"crawler:{j}:lease:4", "crawler:{j}:lease:9", "b 7", "b 2"});
  CHECK(leave[1] == Strings{"DEL", "crawler:{j}:alive:b"});
  CHECK(m.LeaveCommands({})[0][2] == "0");
}

}  // namespace
}  // namespace crawler::cluster
