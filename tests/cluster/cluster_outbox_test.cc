// The outbox's RAM part (cluster/exchange/outbox.h) without Redis: batching by size
// and age, the lag limit, held batches first, what a cut keeps, the queued
// count. (The outbox against a real redis-server, with a slow owner, spill
// files and a full Redis: cluster_test.cc and cluster_fault_test.cc.)
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "cluster/exchange/outbox.h"
#include "cluster/redis/cluster_wire.h"

namespace crawler::cluster {
namespace {

using namespace std::chrono_literals;
using Clock = Outbox::Clock;

frontier::UrlEntry Url(int i) {
  frontier::UrlEntry e;
  e.url = "http://h" + std::to_string(i % 3) + ".test/p" + std::to_string(i);
  e.depth = static_cast<uint32_t>(i % 5);
  e.redirects = static_cast<uint32_t>(i % 2);
  e.referrer = i % 4 == 0 ? "" : "http://h.test/";
  if (i % 7 == 0) e.kind = frontier::UrlEntry::Kind::kSitemap;
  return e;
}

// The URLs in `text`'s wire lines.
std::vector<std::string> Urls(const std::string& text) {
  std::vector<frontier::UrlEntry> entries;
  REQUIRE(cluster_wire::ParseLines(text, &entries));
  std::vector<std::string> urls;
  for (const auto& e : entries) urls.push_back(e.url);
  return urls;
}

TEST_CASE("Outbox: batches of batch_urls go at once, a partial one after batch_ms",
          "[engine][cluster]") {
  const Clock::time_point t0(10s);
  Outbox box(/*shards=*/4, /*batch_urls=*/3, /*batch_ms=*/100ms, /*max_lag=*/100);
  for (int i = 0; i < 7; ++i) box.Add(1, Url(i), t0);
  box.Add(2, Url(7), t0 + 50ms);
  CHECK(box.queued_urls() == 8);

  // Two full batches of shard 1 now; its seventh URL and shard 2's wait.
  std::vector<OutBatch> due = box.Select(false, t0 + 1ms);
  REQUIRE(due.size() == 2);
  CHECK(due[0].shard == 1);
  CHECK(due[0].urls == 3);
  CHECK(Urls(due[0].lines) ==
        std::vector<std::string>{Url(0).url, Url(1).url, Url(2).url});
  CHECK(Urls(due[1].lines).size() == 3);
  box.Sent();
  // Shard 1's partial batch is 100 ms old (its first URL's time), shard 2's
  // only 50 ms.
  due = box.Select(false, t0 + 100ms);
  REQUIRE(due.size() == 1);
  CHECK(due[0].shard == 1);
  CHECK(due[0].urls == 1);
  box.Sent();
  due = box.Select(false, t0 + 150ms);
  REQUIRE(due.size() == 1);
  CHECK(due[0].shard == 2);
  box.Sent();
  // flush_all takes a batch of any age.
  box.Add(3, Url(8), t0 + 200ms);
  due = box.Select(true, t0 + 200ms);
  REQUIRE(due.size() == 1);
  CHECK(due[0].shard == 3);
  // Not confirmed yet: still queued (the node is not idle).
  CHECK(box.queued_urls() == 9);
}

TEST_CASE("Outbox: the lag limit holds batches, held ones go first when room comes",
          "[engine][cluster]") {
  const Clock::time_point t0(10s);
  Outbox box(2, /*batch_urls=*/1, 10ms, /*max_lag=*/2);
  box.SetLag(0, 1);  // its owner has one entry unread
  CHECK(box.Room(0) == 1);
  for (int i = 0; i < 4; ++i) box.Add(0, Url(i), t0);
  std::vector<OutBatch> due = box.Select(false, t0);
  REQUIRE(due.size() == 1);  // room for one
  CHECK(Urls(due[0].lines) == std::vector<std::string>{Url(0).url});
  CHECK(box.Room(0) == 0);  // the batch sent counts until Redis says otherwise
  CHECK(box.held_urls() == 3);
  CHECK(box.HeldShards() == std::vector<uint32_t>{0});
  CHECK(box.SpillRoom(0) == 0);
  box.Confirmed(due[0], /*lag=*/2);
  box.Sent();
  CHECK(box.queued_urls() == 3);

  // A new URL arrives; the owner reads everything (lag 0): the held ones go
  // first, oldest first, up to the room; the new one waits its turn.
  box.Add(0, Url(9), t0 + 1s);
  box.SetLag(0, 0);
  due = box.Select(false, t0 + 1s);
  REQUIRE(due.size() == 2);
  CHECK(Urls(due[0].lines) == std::vector<std::string>{Url(1).url});
  CHECK(Urls(due[1].lines) == std::vector<std::string>{Url(2).url});
  CHECK(box.held_urls() == 2);  // Url(3), then Url(9)
  box.Sent();
  box.SetLag(0, 0);
  due = box.Select(false, t0 + 2s);
  REQUIRE(due.size() == 2);
  CHECK(Urls(due[0].lines) == std::vector<std::string>{Url(3).url});
  CHECK(Urls(due[1].lines) == std::vector<std::string>{Url(9).url});
  CHECK(box.held_urls() == 0);
  CHECK(box.HeldShards().empty());
  // A shard with nothing held may read its spill files back, 64 at most.
  box.SetLag(1, 0);
  Outbox wide(2, 1, 10ms, 1000);
  CHECK(wide.SpillRoom(1) == 64);
}

TEST_CASE(
    "Outbox: a cut holds every URL not confirmed (filling, full, in flight, held); "
    "refused and unconfirmed batches are held, not lost",
    "[engine][cluster]") {
  const Clock::time_point t0(10s);
  Outbox box(3, /*batch_urls=*/2, 1s, /*max_lag=*/1);
  for (int i = 0; i < 5; ++i) box.Add(0, Url(i), t0);  // 2 full + 1 filling
  box.Add(1, Url(5), t0);
  std::vector<OutBatch> due = box.Select(false, t0 + 10ms);  // one full of shard 0
  REQUIRE(due.size() == 1);
  // In flight (sending), held (shard 0's second full batch: no room), and
  // filling (shard 0's fifth URL, shard 1's): all in the cut.
  std::string cut;
  box.AppendCut(&cut);
  std::vector<std::string> urls = Urls(cut);
  std::sort(urls.begin(), urls.end());
  std::vector<std::string> all;
  for (int i = 0; i < 6; ++i) all.push_back(Url(i).url);
  std::sort(all.begin(), all.end());
  CHECK(urls == all);

  // The send failed (no reply): held, still in the next cut, still queued.
  box.Sent();
  box.Hold(due[0]);
  cut.clear();
  box.AppendCut(&cut);
  CHECK(Urls(cut).size() == 6);
  CHECK(box.queued_urls() == 6);

  // Redis down: the due batches are held, not sent. Spilled: out of RAM,
  // still queued until confirmed.
  box.HoldDue(t0 + 2s);  // shard 0's and 1's filling batches, now 2 s old
  CHECK(box.held_urls() == 6);
  auto spilled = box.TakeHeld();
  CHECK(box.held_urls() == 0);
  CHECK(spilled.size() == 2);
  CHECK(box.queued_urls() == 6);
  cut.clear();
  box.AppendCut(&cut);
  CHECK(cut.empty());  // the spill files hold them (the checkpoint names those)
  // Read back and sent: in flight again, and in a cut meanwhile.
  OutBatch back = spilled[1].front();
  box.Sending(back);
  cut.clear();
  box.AppendCut(&cut);
  CHECK(Urls(cut) == std::vector<std::string>{Url(5).url});
  box.Confirmed(back, std::nullopt);
  box.Sent();
  CHECK(box.queued_urls() == 5);
  // Spill files taken back after a crash count as queued.
  box.Requeued(10);
  CHECK(box.queued_urls() == 15);
}

TEST_CASE("AppendLine: what ParseLines reads back, a sitemap marked",
          "[engine][cluster]") {
  std::string lines;
  for (int i = 0; i < 8; ++i) cluster_wire::AppendLine(Url(i), &lines);
  std::vector<frontier::UrlEntry> back;
  REQUIRE(cluster_wire::ParseLines(lines, &back));
  REQUIRE(back.size() == 8);
  for (int i = 0; i < 8; ++i) {
    CHECK(back[i].url == Url(i).url);
    CHECK(back[i].depth == Url(i).depth);
    CHECK(back[i].redirects == Url(i).redirects);
    CHECK(back[i].referrer == Url(i).referrer);
    CHECK(back[i].kind == Url(i).kind);
  }
}

}  // namespace
}  // namespace crawler::cluster
