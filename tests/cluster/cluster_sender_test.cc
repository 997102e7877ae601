// The sending side of a node's exchange (cluster/exchange/sender.h) against a real
// redis-server, without a crawl: every URL shipped arrives once in its
// shard's stream; a Redis that refuses sends (maxmemory reached) gets them
// later, after a pause and one probe at a time, none lost; held URLs past
// outbox_ram_urls go to spill files, which a cut names, a resumed node takes
// back and sends, and a later committed cut deletes. The back-off itself is
// pure logic (RefusalBackoff). (Whole nodes with a full Redis: cluster_test.cc,
// "Cluster: Redis full*".)
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "cluster/exchange/sender.h"
#include "cluster/redis/cluster_wire.h"
#include "cluster/redis/redis.h"
#include "redis_server.h"
#include "run_command.h"

namespace crawler::cluster {
namespace {

namespace fs = std::filesystem;
using testing::RedisServer;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

TEST_CASE(
    "RefusalBackoff: a refusal pauses sends 100 ms, doubling to 2 s; logged once, then "
    "every 30 s; a send taken ends it",
    "[engine][cluster]") {
  RefusalBackoff b;
  const Clock::time_point t0 = Clock::now();
  CHECK_FALSE(b.refusing());
  CHECK_FALSE(b.Paused(t0));
  CHECK_FALSE(b.Accepted(t0).has_value());  // nothing to end
  CHECK(b.Refused(t0));                     // the first: logged
  CHECK(b.refusing());
  CHECK(b.Paused(t0 + milliseconds(99)));
  CHECK_FALSE(b.Paused(t0 + milliseconds(100)));
  CHECK_FALSE(b.Refused(t0 + milliseconds(100)));  // paused 200 ms, not logged
  CHECK(b.Paused(t0 + milliseconds(299)));
  CHECK_FALSE(b.Paused(t0 + milliseconds(300)));
  Clock::time_point t = t0 + milliseconds(300);
  for (int i = 0; i < 10; ++i) CHECK_FALSE(b.Refused(t));
  CHECK(b.pause() == milliseconds(2000));  // capped
  CHECK(b.Paused(t + milliseconds(1999)));
  CHECK_FALSE(b.Paused(t + milliseconds(2000)));
  CHECK_FALSE(b.Refused(t0 + std::chrono::seconds(30)));
  CHECK(b.Refused(t0 + std::chrono::seconds(31)));  // 30 s after the last log
  auto lasted = b.Accepted(t0 + std::chrono::seconds(40));
  REQUIRE(lasted.has_value());
  CHECK(*lasted == Approx(40.0));
  CHECK_FALSE(b.refusing());
  CHECK_FALSE(b.Paused(t0 + std::chrono::seconds(40)));
  // A new run of refusals starts again at 100 ms (and is not logged: the
  // last line is less than 30 s old).
  CHECK_FALSE(b.Refused(t0 + std::chrono::seconds(41)));
  CHECK_FALSE(b.Paused(t0 + std::chrono::seconds(41) + milliseconds(100)));
}

struct SenderFixture {
  testing::ScratchRedis scratch{"sender-test"};
  const std::string dir = scratch.dir();
  RedisServer* server = &scratch.server();
  std::unique_ptr<Redis> redis;
  engine::ClusterConfig cfg;

  SenderFixture() {
    auto address = ParseRedisUrl(server->Url());
    REQUIRE(address.ok());
    auto r = Redis::Connect(*address, 5);
    REQUIRE(r.ok());
    redis = std::move(r).value();
    cfg.node = "n1";
    cfg.shards = 8;
    cfg.batch_urls = 4;
    cfg.batch_ms = 1;
  }
  std::unique_ptr<Sender> MakeSender() {
    return std::make_unique<Sender>(
        cfg, [](const std::string& suffix) { return "crawler:{t}:" + suffix; },
        dir + "/out");
  }
  void Config(const std::string& args) {
    REQUIRE(testing::RunCommand("redis-cli -p " + std::to_string(server->port()) +
                                " CONFIG SET " + args)
                .exit_code == 0);
  }
  // Every URL in the shards' streams, with how often it is there; *entries:
  // how many stream entries.
  std::map<std::string, int> Streams(size_t* entries) {
    std::map<std::string, int> urls;
    *entries = 0;
    for (uint32_t s = 0; s < cfg.shards; ++s) {
      auto r = redis->Command({"XRANGE", "crawler:{t}:s:" + std::to_string(s), "-", "+"});
      REQUIRE(r.ok());
      for (size_t i = 0; i < r->view().size(); ++i) {
        std::map<std::string, std::string> f;
        (*r)[i][1].ForEachPair(
            [&](ReplyView field, ReplyView value) { f[field.str()] = value.str(); });
        std::string raw;
        REQUIRE(cluster_wire::Uncompress(f["z"], std::stoul(f["b"]), &raw));
        std::vector<frontier::UrlEntry> got;
        REQUIRE(cluster_wire::ParseLines(raw, &got));
        CHECK(got.size() == std::stoul(f["n"]));
        for (const auto& e : got) {
          CHECK(ShardOfUrl(e.url) == s);  // in its own shard's stream
          ++urls[e.url];
        }
        ++*entries;
      }
    }
    return urls;
  }
  // "http://hN.test" -> shard N % 8.
  static uint32_t ShardOfHost(std::string_view host_key) {
    std::string_view host = host_key.substr(host_key.find("://") + 3);
    return static_cast<uint32_t>(std::stoul(std::string(host.substr(1)))) % 8;
  }
  static uint32_t ShardOfUrl(const std::string& url) {
    return ShardOfHost(frontier::HostKey(url));
  }
  static std::vector<frontier::UrlEntry> Urls(int n, int from) {
    std::vector<frontier::UrlEntry> out;
    for (int i = from; i < from + n; ++i) {
      frontier::UrlEntry e;
      e.url = "http://h" + std::to_string(i % 10) + ".test/" + std::to_string(i);
      out.push_back(e);
    }
    return out;
  }
  // Sends until nothing is queued (false: still queued after 5 s).
  bool SendAll(Sender& sender) {
    for (auto until = Clock::now() + std::chrono::seconds(5); Clock::now() < until;) {
      bool did = false;
      if (!sender.SendDue(*redis, true, &did)) return false;
      if (sender.Quiet()) return true;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return false;
  }
  report::ClusterReport Report(const Sender& sender) {
    report::ClusterReport f;
    sender.Report(&f);
    return f;
  }
};

TEST_CASE(
    "Sender: URLs reach their shards' streams once; sends Redis refuses (maxmemory) "
    "are held, paused and probed one batch at a time, then all sent",
    "[engine][cluster]") {
  SenderFixture t;
  auto sender = t.MakeSender();
  sender->Ship(SenderFixture::Urls(40, 0), SenderFixture::ShardOfHost);
  CHECK_FALSE(sender->Quiet());
  REQUIRE(t.SendAll(*sender));
  CHECK(t.Report(*sender).urls_sent == 40);
  CHECK(t.Report(*sender).urls_queued == 0);

  // Redis full: every send is refused (an error reply, the connection fine).
  t.Config("maxmemory 1");
  sender->Ship(SenderFixture::Urls(40, 40), SenderFixture::ShardOfHost);
  bool did = false;
  REQUIRE(sender->SendDue(*t.redis, true, &did));  // refused is not broken
  CHECK(did);
  CHECK(sender->refusing());
  const uint64_t refused = t.Report(*sender).sends_refused;
  CHECK(refused >= 10);  // 40 URLs on 8 shards in batches of at most 4
  CHECK(t.Report(*sender).urls_queued == 40);
  CHECK(t.Report(*sender).urls_held == 40);
  CHECK(t.Report(*sender).sends_blocked == "full (maxmemory reached, OOM)");
  CHECK_FALSE(sender->Quiet());
  // Paused: nothing is sent at once.
  REQUIRE(sender->SendDue(*t.redis, true, &did));
  CHECK(t.Report(*sender).sends_refused == refused);
  // After the pause, one batch goes as a probe (refused again).
  std::this_thread::sleep_for(milliseconds(150));
  REQUIRE(sender->SendDue(*t.redis, true, &did));
  CHECK(t.Report(*sender).sends_refused == refused + 1);
  // Redis has room again: the next probe is taken, then the rest.
  t.Config("maxmemory 0");
  std::this_thread::sleep_for(milliseconds(250));
  REQUIRE(sender->SendDue(*t.redis, true, &did));
  CHECK_FALSE(sender->refusing());
  CHECK(t.Report(*sender).sends_blocked.empty());
  CHECK(t.Report(*sender).urls_sent > 40);
  CHECK(t.Report(*sender).urls_sent <= 44);  // the probe only
  REQUIRE(t.SendAll(*sender));
  CHECK(t.Report(*sender).urls_sent == 80);
  CHECK(t.Report(*sender).sends_refused == refused + 1);

  size_t entries = 0;
  std::map<std::string, int> got = t.Streams(&entries);
  CHECK(got.size() == 80);
  for (const auto& [url, n] : got) {
    INFO(url);
    CHECK(n == 1);
  }
}

TEST_CASE(
    "Sender: held URLs past outbox_ram_urls go to spill files; a cut names them, a "
    "resumed node sends them, a later committed cut deletes them",
    "[engine][cluster]") {
  SenderFixture t;
  t.cfg.outbox_ram_urls = 10;
  {
    auto sender = t.MakeSender();
    sender->Ship(SenderFixture::Urls(40, 0), SenderFixture::ShardOfHost);
    std::this_thread::sleep_for(milliseconds(5));  // every batch due (batch_ms 1)
    sender->Hold();                                // Redis down
    report::ClusterReport f = t.Report(*sender);
    CHECK(f.urls_queued == 40);
    CHECK(f.urls_on_disk == 40);
    CHECK(f.urls_held == 0);
    checkpoint::OutboxCut cut = sender->Cut(1);
    CHECK(cut.text == cluster_wire::kOutboxHeader);  // nothing left in RAM
    CHECK(cut.spill_files.size() >= 2);              // the files, and their directory
    // Killed here: a resumed node takes the files back.
  }
  auto sender = t.MakeSender();
  CHECK(sender->Quiet());
  REQUIRE(sender->RestoreSpill().ok());
  CHECK_FALSE(sender->Quiet());
  CHECK(t.Report(*sender).urls_on_disk == 40);
  REQUIRE(t.SendAll(*sender));
  CHECK(t.Report(*sender).urls_on_disk == 0);
  size_t entries = 0;
  std::map<std::string, int> got = t.Streams(&entries);
  CHECK(got.size() == 40);
  for (const auto& [url, n] : got) CHECK(n == 1);

  // The files read back stay until a cut after their reading is committed.
  auto files = [&] {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(t.dir + "/out/cluster-outbox"))
      n += e.path().extension() == ".txt";
    return n;
  };
  CHECK(files() > 0);
  (void)sender->Cut(2);
  CHECK(files() > 0);
  sender->Committed(2);
  CHECK(files() == 0);

  // A resumed node's outbox.txt: queued again; a damaged one names its file.
  std::string text = cluster_wire::kOutboxHeader;
  text += "http://h3.test/x\t0\t0\t\n";
  REQUIRE(
      sender->RestoreOutbox(text, "OUT/checkpoint/outbox.txt", SenderFixture::ShardOfHost)
          .ok());
  CHECK(t.Report(*sender).urls_queued == 1);
  Status bad =
      sender->RestoreOutbox("crawler-outbox 0\nhttp://h3.test/y\t0\t0\t\n",
                            "OUT/checkpoint/outbox.txt", SenderFixture::ShardOfHost);
  CHECK(bad.code() == Status::Code::kCorruption);
  CHECK_THAT(bad.message(), Catch::Contains("OUT/checkpoint/outbox.txt"));
  CHECK(t.Report(*sender).urls_queued == 1);
}

}  // namespace
}  // namespace crawler::cluster
