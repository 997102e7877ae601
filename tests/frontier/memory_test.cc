// Frontier::Memory: the stats report's "frontier URLs" and "frontier hosts".
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "dedup/filter.h"
#include "frontier/frontier.h"
#include "ram_queue.h"

namespace crawler::frontier {
namespace {

TEST_CASE("Frontier memory: URLs count while queued or leased, hosts while known",
          "[frontier][memory]") {
  dedup::FilterOptions fo;
  fo.capacity = 10'000;
  auto filter = std::move(dedup::Filter::Create(fo)).value();
  FrontierOptions o;
  o.min_delay_s = 0;
  o.max_connections_per_host = 1000;
  auto f = std::move(Frontier::Create(o)).value();
  CHECK(f->Memory().urls == 0);
  const FrontierMemory empty = f->Memory();

  // 1,000 URLs of 80 characters over 10 hosts: each URL's string is on the
  // heap (at least 81 bytes), and so is its entry.
  std::vector<UrlEntry> batch;
  for (int i = 0; i < 1000; ++i) {
    std::string url = "http://host" + std::to_string(i % 10) + ".test/";
    url += std::string(80 - url.size() - 4, 'p') + std::to_string(1000 + i);
    batch.push_back(UrlEntry{url, 1, "http://ref/"});
  }
  REQUIRE(f->Admit(batch, *filter).ok());
  const FrontierMemory full = f->Memory();
  CHECK(full.urls >= 1000 * (81 + sizeof(UrlEntry)));
  CHECK(full.urls < 1000 * 400);
  CHECK(full.hosts > empty.hosts + 10 * 20);  // ten keys, records, index entries

  // Leased URLs still count; done, they are gone.
  for (int h = 0; h < 10; ++h)
    f->OpenHost("http://host" + std::to_string(h) + ".test", 0.0);
  const auto t = Clock::now();
  std::vector<Lease> leases;
  while (auto lease = std::move(f->Pop(t)).value()) leases.push_back(std::move(*lease));
  REQUIRE(leases.size() == 1000);
  CHECK(f->Memory().urls >= 1000 * (81 + sizeof(UrlEntry)));
  for (const Lease& lease : leases) f->Done(lease, t, 0.01);
  CHECK(f->Memory().urls == 0);
  CHECK(f->Memory().hosts > empty.hosts + 10 * 20);  // hosts are known for good
}

TEST_CASE(
    "RamQueue: by depth, revisits last, FIFO within one, a deferred URL first; "
    "sequences renumbered in order when they run out",
    "[frontier][memory]") {
  for (uint32_t start : {uint32_t{1} << 31, UINT32_MAX - 3, uint32_t{3}}) {
    INFO(start);
    RamQueue q(start);
    auto entry = [](const std::string& url, uint32_t depth, bool revisit = false) {
      UrlEntry e{url, depth, ""};
      e.revisit = revisit;
      return e;
    };
    q.PushBack(entry("d2-a", 2));
    q.PushBack(entry("r0", 0, true));
    q.PushBack(entry("d1-a", 1));
    q.PushBack(entry("d2-b", 2));
    q.PushBack(entry("d1-b", 1));
    q.PushFront(entry("d2-deferred", 2));
    q.PushFront(entry("d1-deferred", 1));
    q.PushBack(entry("d1-c", 1));
    q.PushFront(entry("d1-deferred-again", 1));
    const std::vector<std::string> want = {
        "d1-deferred-again", "d1-deferred", "d1-a", "d1-b", "d1-c",
        "d2-deferred",       "d2-a",        "d2-b", "r0"};
    std::vector<std::string> listed;
    q.ForEachInOrder([&](const UrlEntry& e) { listed.push_back(e.url); });
    CHECK(listed == want);
    CHECK(q.MinRank() == 1);
    std::vector<std::string> popped;
    while (!q.empty()) popped.push_back(q.Pop().url);
    CHECK(popped == want);
    CHECK(q.HeapBytes() == 0);  // an empty queue gives its buffer back
  }
}

}  // namespace
}  // namespace crawler::frontier
