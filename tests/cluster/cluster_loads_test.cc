// Shard transfer, the taking side (cluster/membership/shard_loads.h), without Redis:
// what a lease gained means (OnGained), the order of loads (one source at a
// time, its shards together), the state kept for a worker until taken and
// the crawl not quiet until then, a failed load tried again, a shard held
// back (skip), and a damaged source whose shards came from elsewhere. The
// reader is the test's (it records the loads); the real reader on real
// checkpoints is tried by cluster_test.cc ("Cluster takeover*", "Cluster
// join*", "Cluster death with its last committed checkpoint damaged*").
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cluster/membership/own_state.h"
#include "cluster/membership/shard_loads.h"

namespace crawler::cluster {
namespace {

using namespace std::chrono_literals;
using Clock = ShardLoads::Clock;
using Shards = std::vector<uint32_t>;

// Records each load; fails the first `fail` of them.
struct Recorder {
  std::mutex mu;
  std::vector<ShardLoad> loads;
  int fail = 0;

  ShardLoads::Reader reader() {
    return [this](const ShardLoad& load) -> Result<engine::ShardState> {
      std::lock_guard<std::mutex> lock(mu);
      loads.push_back(load);
      if (fail > 0) {
        --fail;
        return Status::Error(Status::Code::kIoError, "not there yet");
      }
      engine::ShardState st;
      st.shards = load.shards;
      st.sequence = load.sequence;
      st.from = "node " + load.node + " checkpoint " + std::to_string(load.sequence);
      return st;
    };
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu);
    return loads.size();
  }
};

const ShardLoads::DirOf kDirs = [](const std::string& node) -> Result<std::string> {
  return "/nonexistent/out-" + node;
};
const auto kNoSkip = [](uint32_t) { return false; };

// Steps (at `now`) until a load ends well (its Finished), or 60 s pass.
std::optional<ShardLoads::Finished> StepUntilLoaded(
    ShardLoads* loads, Clock::time_point now, const ShardLoads::DirOf& dirs = kDirs) {
  const auto deadline = Clock::now() + 60s;
  while (Clock::now() < deadline) {
    if (auto done = loads->Step(dirs, kNoSkip, now)) return done;
    std::this_thread::sleep_for(1ms);
  }
  return std::nullopt;
}

TEST_CASE(
    "ShardLoads: one source at a time with all its shards; the state waits for a "
    "worker, and the crawl is not quiet until it took it",
    "[engine][cluster]") {
  Recorder rec;
  ShardLoads loads(rec.reader());
  const Clock::time_point t0 = Clock::now();
  CHECK(loads.Quiet());
  loads.Want(3, "a 5", "");
  loads.Want(7, "b 2", "");
  loads.Want(9, "a 5", "");
  CHECK(loads.Wants(3));
  CHECK_FALSE(loads.Quiet());

  auto done = StepUntilLoaded(&loads, t0);
  REQUIRE(done);
  CHECK(done->shards == Shards{3, 9});
  CHECK(done->from == "a 5");
  REQUIRE(rec.count() == 1);
  CHECK(rec.loads[0].dir == "/nonexistent/out-a");
  CHECK(rec.loads[0].node == "a");
  CHECK(rec.loads[0].sequence == 5);
  CHECK_FALSE(loads.Wants(3));
  CHECK(loads.Wants(7));
  CHECK(loads.Waiting());

  // No next load while a worker has not taken this one's state: none was
  // started (Loading), so none can be read later.
  for (int i = 0; i < 20; ++i) CHECK_FALSE(loads.Step(kDirs, kNoSkip, t0));
  CHECK_FALSE(loads.Loading());
  CHECK(rec.count() == 1);

  auto st = loads.Take();
  REQUIRE(st);
  CHECK(st->shards == Shards{3, 9});
  CHECK_FALSE(loads.Take());
  CHECK_FALSE(loads.Waiting());
  CHECK_FALSE(loads.Quiet());  // shard 7 still to load

  done = StepUntilLoaded(&loads, t0);
  REQUIRE(done);
  CHECK(done->shards == Shards{7});
  CHECK(done->from == "b 2");
  CHECK_FALSE(loads.Quiet());  // loaded, not restored yet
  REQUIRE(loads.Take());
  CHECK(loads.Quiet());
}

TEST_CASE(
    "ShardLoads: a failed load is tried again 2 s later, and its shards stay wanted",
    "[engine][cluster]") {
  Recorder rec;
  rec.fail = 1;
  ShardLoads loads(rec.reader());
  const Clock::time_point t0 = Clock::now();
  loads.Want(4, "a 3", "");
  // The first try fails: Step collects its end (nothing for a worker),
  // however long its thread takes; then no other try before t0 + 2 s.
  bool collected = false;
  for (int i = 0; i < 60000 && !collected; ++i) {
    CHECK_FALSE(loads.Step(kDirs, kNoSkip, t0));
    collected = rec.count() == 1 && !loads.Loading();
    if (!collected) std::this_thread::sleep_for(1ms);
  }
  REQUIRE(collected);
  for (int i = 0; i < 20; ++i) CHECK_FALSE(loads.Step(kDirs, kNoSkip, t0));
  CHECK_FALSE(loads.Loading());
  CHECK(rec.count() == 1);
  CHECK(loads.Wants(4));
  CHECK_FALSE(loads.Quiet());
  CHECK_FALSE(loads.Step(kDirs, kNoSkip, t0 + 1900ms));
  CHECK(rec.count() == 1);
  auto done = StepUntilLoaded(&loads, t0 + 2s);
  REQUIRE(done);
  CHECK(done->shards == Shards{4});
  CHECK(rec.count() == 2);

  // A node whose directory is not published yet: the same wait, no read.
  REQUIRE(loads.Take());
  int asked = 0;
  const ShardLoads::DirOf unpublished =
      [&](const std::string& node) -> Result<std::string> {
    ++asked;
    return Status::Error(Status::Code::kIoError, "node '" + node + "' published nothing");
  };
  loads.Want(5, "c 8", "");
  const Clock::time_point t1 = t0 + 10s;
  CHECK_FALSE(loads.Step(unpublished, kNoSkip, t1));
  CHECK(asked == 1);
  CHECK_FALSE(loads.Step(unpublished, kNoSkip, t1 + 1s));
  CHECK(asked == 1);
  CHECK_FALSE(loads.Step(unpublished, kNoSkip, t1 + 2s));
  CHECK(asked == 2);
  CHECK(loads.Wants(5));
  CHECK(rec.count() == 2);
}

TEST_CASE("ShardLoads: a shard held back waits; the others of its source load",
          "[engine][cluster]") {
  Recorder rec;
  ShardLoads loads(rec.reader());
  const Clock::time_point t0 = Clock::now();
  loads.Want(2, "a 1", "");
  bool dropping = true;  // shard 2: given up here, its queue not dropped yet
  const auto skip = [&](uint32_t s) { return s == 2 && dropping; };
  for (int i = 0; i < 5; ++i) CHECK_FALSE(loads.Step(kDirs, skip, t0));
  CHECK_FALSE(loads.Loading());  // none started: none can be read later
  CHECK(rec.count() == 0);
  loads.Want(6, "a 1", "");
  std::optional<ShardLoads::Finished> done;
  for (int i = 0; i < 60000 && !done; ++i) {
    done = loads.Step(kDirs, skip, t0);
    std::this_thread::sleep_for(1ms);
  }
  REQUIRE(done);
  CHECK(done->shards == Shards{6});
  REQUIRE(loads.Take());
  dropping = false;
  done = StepUntilLoaded(&loads, t0);
  REQUIRE(done);
  CHECK(done->shards == Shards{2});
}

TEST_CASE(
    "ShardLoads: a damaged source's shards that came to its node after the checkpoint "
    "before it are loaded from where they came from",
    "[engine][cluster]") {
  namespace fs = std::filesystem;
  const std::string dir =
      (fs::temp_directory_path() / ("loads-test-" + std::to_string(::getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir + "/checkpoint");
  { std::ofstream(dir + "/checkpoint/MANIFEST.json") << "{damaged"; }
  const ShardLoads::DirOf dirs = [&](const std::string&) -> Result<std::string> {
    return dir;
  };
  Recorder rec;
  ShardLoads loads(rec.reader());
  const Clock::time_point t0 = Clock::now();
  loads.Want(5, "a 7", "b 3");                 // came to a from b's checkpoint 3
  loads.Want(6, "a 7", "");                    // a had it in its checkpoint before 7
  CHECK_FALSE(loads.Step(dirs, kNoSkip, t0));  // 5 moves; nothing loads
  CHECK(loads.wanted().at(5) == "b 3");
  CHECK(loads.wanted().at(6) == "a 7");
  CHECK(rec.count() == 0);

  auto done = StepUntilLoaded(&loads, t0, dirs);
  REQUIRE(done);
  CHECK(done->shards == Shards{5});
  CHECK(done->from == "b 3");
  REQUIRE(loads.Take());
  // Shard 6 is read from a's damaged checkpoint 7 (ReadShards falls back to
  // the one before, which holds it).
  done = StepUntilLoaded(&loads, t0, dirs);
  REQUIRE(done);
  CHECK(done->shards == Shards{6});
  REQUIRE(rec.count() == 2);
  CHECK(rec.loads[1].node == "a");
  CHECK(rec.loads[1].sequence == 7);
  fs::remove_all(dir);
}

LeaseReply Taken(const std::string& source, const std::string& source_prev = "") {
  LeaseReply r;
  r.state = "taken";
  r.epoch = 3;
  r.holder = "";
  r.source = source;
  r.source_prev = source_prev;
  return r;
}

TEST_CASE(
    "OnGained: a lease newly this process's is loaded from its source, restored from "
    "the checkpoint resumed from, or ready at once",
    "[engine][cluster]") {
  using A = Gain::Action;
  // Another node's source: loaded from it, source_prev kept for its damage.
  Gain g = OnGained(4, Taken("b 7", "c 2"), "a", /*takeover=*/true, false, nullptr);
  CHECK(g.action == A::kLoad);
  CHECK(g.source == "b 7");
  CHECK(g.prev == "c 2");
  // No shared_dir: nothing to load from; a new shard (no source): empty.
  CHECK(OnGained(4, Taken("b 7"), "a", false, false, nullptr).action == A::kReady);
  CHECK(OnGained(4, Taken(""), "a", true, false, nullptr).action == A::kReady);
  // This node's own source with no resume under way: an earlier process's
  // checkpoint (the shard was held, lost, and is taken back): loaded.
  CHECK(OnGained(4, Taken("a 5"), "a", true, false, nullptr).action == A::kLoad);

  const ResumedFrom resumed{5, {1, 4, 9}};
  // The checkpoint it resumed from holds the shard: restored from it.
  CHECK(OnGained(4, Taken("a 5"), "a", true, false, &resumed).action == A::kRestoreOwn);
  CHECK(OnGained(4, Taken("a 5"), "a", false, false, &resumed).action == A::kRestoreOwn);
  // ... but not a shard it does not hold (no hosts left in it): loaded.
  g = OnGained(6, Taken("a 5"), "a", true, false, &resumed);
  CHECK(g.action == A::kLoad);
  CHECK(g.source == "a 5");
  // Given up here (a handoff) and taken back: loaded from the handoff's
  // checkpoint, even though the resumed one lists the shard.
  g = OnGained(4, Taken("a 5"), "a", true, /*released=*/true, &resumed);
  CHECK(g.action == A::kLoad);
  // An older checkpoint of its own: loaded from it.
  CHECK(OnGained(4, Taken("a 3"), "a", true, false, &resumed).action == A::kLoad);

  // The source names a newer checkpoint of its own, damaged (the node
  // resumed from checkpoint.prev/, 5): restored from what it resumed from...
  CHECK(OnGained(4, Taken("a 6"), "a", true, false, &resumed).action == A::kRestoreOwn);
  CHECK(OnGained(6, Taken("a 6"), "a", true, false, &resumed).action == A::kRestoreOwn);
  // ... unless that checkpoint was the first to hold it (source_prev): then
  // from where it came from, with no fallback after it (restoring it from
  // this node's own checkpoint once gave back an empty shard).
  g = OnGained(6, Taken("a 6", "b 4"), "a", true, false, &resumed);
  CHECK(g.action == A::kLoad);
  CHECK(g.source == "b 4");
  CHECK(g.prev.empty());
}

TEST_CASE(
    "OwnState: a resumed node's own state is restored only for the shards it holds again",
    "[engine][cluster]") {
  // Hosts a.example, b.example, c.example are in shards 1, 2, 3.
  OwnState::ShardOf shard_of = [](std::string_view host) -> uint32_t {
    if (host.find("a.example") != std::string_view::npos) return 1;
    return host.find("b.example") != std::string_view::npos ? 2 : 3;
  };
  engine::ShardState own;
  own.from = "node a checkpoint 9";
  own.sequence = 9;
  for (const char* h : {"http://c.example", "http://a.example", "http://b.example"}) {
    frontier::HostImage image;
    image.key = h;
    own.frontier.hosts.push_back(image);
    engine::HostSnapshot snapshot;
    snapshot.key = h;
    own.hosts.push_back(snapshot);
  }
  for (const char* u : {"http://a.example/1", "http://b.example/1", "http://b.example/2",
                        "http://c.example/1", "http://a.example/2"}) {
    frontier::UrlEntry e;
    e.url = u;
    own.frontier.urls.emplace_back(e, false);
  }
  OwnState state;
  CHECK(state.resumed() == nullptr);
  state.Stash(std::move(own), shard_of);
  REQUIRE(state.resumed() != nullptr);
  CHECK(state.from().sequence == 9);
  CHECK(state.from().shards == Shards{1, 2, 3});  // sorted, each once

  // This process holds shards 3 and 1 again; shard 2 was taken over meanwhile.
  state.Restore(3);
  state.Restore(1);
  size_t dropped = 99;
  std::optional<engine::ShardState> st = state.Take(shard_of, &dropped);
  REQUIRE(st);
  CHECK(st->own);
  CHECK(st->from == "node a checkpoint 9");
  CHECK(st->shards == Shards{3, 1});
  std::vector<std::string> hosts, urls, table;
  for (const auto& h : st->frontier.hosts) hosts.push_back(h.key);
  for (const auto& u : st->frontier.urls) urls.push_back(u.first.url);
  for (const auto& h : st->hosts) table.push_back(h.key);
  CHECK(hosts == std::vector<std::string>{"http://c.example", "http://a.example"});
  CHECK(urls == std::vector<std::string>{"http://a.example/1", "http://c.example/1",
                                         "http://a.example/2"});
  CHECK(table == hosts);
  CHECK(dropped == 2);  // b.example's two URLs: left to its new owner

  // Taken once: OnGained reads no resumed state any more; the checkpoint
  // resumed from is still known.
  CHECK(state.resumed() == nullptr);
  CHECK(state.from().sequence == 9);
  CHECK_FALSE(state.Take(shard_of, &dropped));
  CHECK(dropped == 0);
}

TEST_CASE(
    "SendAgainFrom: a source's outbox goes again from one taker per URL, the one taking "
    "its referrer's shard; a URL with no referrer, or whose referrer's shard the source "
    "held no URLs queued for, from every taker",
    "[engine][cluster]") {
  // Hosts a, b, c, d.example are in shards 1, 2, 3, 4. The source had URLs
  // queued for shards 1 and 2 at its cut (c's shard: handed over before it;
  // d: another node's host, the referrer of a URL it shipped on). Its
  // outbox: links found on a's and b's pages, on c's, one found by another
  // node on d, and a seed (no referrer).
  auto shard_of = [](std::string_view host) -> uint32_t {
    return static_cast<uint32_t>(host.substr(std::string_view("http://").size())[0] -
                                 'a' + 1);
  };
  const std::set<uint32_t> held = {1, 2};
  std::vector<frontier::UrlEntry> outbox;
  for (const char* from : {"a", "a", "b", "c", "d"})
    outbox.push_back({"http://x.example/" + std::to_string(outbox.size()), 1,
                      std::string("http://") + from + ".example/page", 0});
  outbox.push_back({"http://x.example/seed", 0, "", 0});
  auto load = [&](const std::set<uint32_t>& want) {
    std::vector<std::string> urls;
    for (const frontier::UrlEntry& e : SendAgainFrom(outbox, held, want, shard_of))
      urls.push_back(e.url);
    return urls;
  };
  using Urls = std::vector<std::string>;
  const Urls everyone = {"http://x.example/3", "http://x.example/4",
                         "http://x.example/seed"};
  auto with = [&](Urls own) {
    own.insert(own.end(), everyone.begin(), everyone.end());
    return own;
  };
  // The source's shards go to two takers: each of a's and b's links once.
  CHECK(load({1}) == with({"http://x.example/0", "http://x.example/1"}));
  CHECK(load({2}) == with({"http://x.example/2"}));
  // One taker of both: all of it, once.
  CHECK(load({1, 2}).size() == outbox.size());
  // A load of none of the held shards sends only what every load does.
  CHECK(load({3, 4}) == everyone);
}

}  // namespace
}  // namespace crawler::cluster
