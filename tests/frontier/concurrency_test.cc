// The frontier under concurrent Admit/Pop/Done (run under TSan in CI): every
// admitted URL is handed out exactly once, and a host never has more
// transfers in flight than allowed.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "frontier/frontier.h"

namespace crawler::frontier {
namespace {

TEST_CASE("Concurrent admit/pop/done: each URL once, per-host limit held",
          "[frontier][concurrency]") {
  dedup::FilterOptions fo;
  fo.capacity = 50'000;
  fo.error_rate = 1e-7;
  auto filter = std::move(dedup::Filter::Create(fo)).value();
  FrontierOptions o;
  o.min_delay_s = 0;
  o.max_memory_urls = 500;
  o.spill_dir = (std::filesystem::temp_directory_path() /
                 ("frontier-conc-" + std::to_string(::getpid())))
                    .string();
  auto f = std::move(Frontier::Create(o)).value();
  constexpr int kHosts = 8, kPerProducer = 4000, kProducers = 2, kConsumers = 2;
  for (int h = 0; h < kHosts; ++h)
    f->OpenHost("http://h" + std::to_string(h), std::nullopt);

  std::atomic<int> producers_left{kProducers};
  std::mutex seen_mu;
  std::multiset<std::string> seen;
  std::atomic<int> over_limit{0};
  std::vector<std::atomic<int>> in_flight(kHosts);
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (int b = 0; b < kPerProducer; b += 40) {
        std::vector<UrlEntry> batch;
        // Both producers offer the same URLs: dedup must admit each once.
        for (int i = b; i < b + 40; ++i) {
          batch.push_back(
              {"http://h" + std::to_string(i % kHosts) + "/" + std::to_string(i), 1, ""});
        }
        if (p == 1) std::reverse(batch.begin(), batch.end());
        REQUIRE(f->Admit(std::move(batch), *filter).ok());
      }
      --producers_left;
    });
  }
  for (int c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&] {
      while (true) {
        auto r = f->Pop(Clock::now());
        REQUIRE(r.ok());
        if (!r.value()) {
          if (producers_left.load() == 0 && f->Empty()) return;
          std::this_thread::yield();
          continue;
        }
        const Lease& lease = *r.value();
        int h = std::stoi(lease.host.substr(8));
        if (in_flight[h].fetch_add(1) + 1 > 1) ++over_limit;
        {
          std::lock_guard<std::mutex> lock(seen_mu);
          seen.insert(lease.entry.url);
        }
        in_flight[h].fetch_sub(1);
        f->Done(lease, Clock::now(), 0);
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(over_limit.load() == 0);
  CHECK(seen.size() == kPerProducer);
  CHECK(std::set<std::string>(seen.begin(), seen.end()).size() == kPerProducer);
  std::filesystem::remove_all(o.spill_dir);
}

}  // namespace
}  // namespace crawler::frontier
