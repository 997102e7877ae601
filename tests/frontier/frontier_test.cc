// The frontier (frontier/frontier.h) on a fake clock: dedup admission, robots
// gating, FIFO per host, politeness delays, per-host connection limits, and
// disk spill with bounded memory.
#include "frontier/frontier.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace crawler::frontier {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const Clock::time_point kT0 = Clock::time_point{} + std::chrono::hours(1);

std::unique_ptr<dedup::Filter> MakeFilter() {
  dedup::FilterOptions o;
  o.capacity = 100'000;
  o.error_rate = 1e-6;
  return std::move(dedup::Filter::Create(o)).value();
}

std::unique_ptr<Frontier> MakeFrontier(FrontierOptions o) {
  return std::move(Frontier::Create(o)).value();
}

// A frontier with no politeness delay.
std::unique_ptr<Frontier> NoDelay(bool most_work_first = true) {
  FrontierOptions o;
  o.min_delay_s = 0;
  o.most_work_first = most_work_first;
  return MakeFrontier(o);
}

std::vector<UrlEntry> Entries(const std::vector<std::string>& urls, uint32_t depth = 1) {
  std::vector<UrlEntry> out;
  for (const auto& u : urls) out.push_back(UrlEntry{u, depth, "http://ref/"});
  return out;
}

std::optional<Lease> PopAt(Frontier& f, Clock::time_point t,
                           Clock::time_point* next = nullptr) {
  auto r = f.Pop(t, next);
  REQUIRE(r.ok());
  return std::move(r).value();
}

TEST_CASE("HostKey is scheme://host[:port]", "[frontier]") {
  CHECK(HostKey("http://a.example/x/y?q") == "http://a.example");
  CHECK(HostKey("https://a.example:8443/") == "https://a.example:8443");
  CHECK(HostKey("http://a.example") == "http://a.example");
  CHECK(HostKey("http://a.example?x") == "http://a.example");
  CHECK(HostKey("nothing") == "");
}

TEST_CASE("Admit asks the filter: each URL is queued once; new hosts reported once",
          "[frontier]") {
  auto filter = MakeFilter();
  auto f = MakeFrontier({});
  auto r = f->Admit(Entries({"http://a/1", "http://a/2", "http://b/1", "http://a/1"}),
                    *filter);
  REQUIRE(r.ok());
  CHECK(r->admitted == 3);
  CHECK(r->duplicates == 1);
  CHECK(r->new_hosts == std::vector<std::string>{"http://a", "http://b"});
  auto again = f->Admit(Entries({"http://a/2", "http://c/1"}), *filter);
  REQUIRE(again.ok());
  CHECK(again->admitted == 1);
  CHECK(again->new_hosts == std::vector<std::string>{"http://c"});
  FrontierStats st = f->Stats(kT0);
  CHECK(st.queued_memory == 4);
  CHECK(st.hosts == 3);
  CHECK(st.hosts_waiting_robots == 3);
  CHECK(st.admitted == 4);
  CHECK(st.duplicates == 2);
}

TEST_CASE("No page of a host is handed out before its robots.txt is known",
          "[frontier]") {
  auto filter = MakeFilter();
  auto f = NoDelay();
  REQUIRE(f->Admit(Entries({"http://a/1", "http://b/1"}), *filter).ok());
  CHECK_FALSE(PopAt(*f, kT0));
  f->OpenHost("http://b", std::nullopt);
  auto lease = PopAt(*f, kT0);
  REQUIRE(lease);
  CHECK(lease->entry.url == "http://b/1");
  CHECK(lease->host == "http://b");
  CHECK(lease->entry.depth == 1);
  CHECK(lease->entry.referrer == "http://ref/");
  CHECK_FALSE(PopAt(*f, kT0));  // a is still closed
}

TEST_CASE("FIFO within a host; the host due longest ago goes first", "[frontier]") {
  auto filter = MakeFilter();
  FrontierOptions o;
  o.min_delay_s = 1;
  auto f = MakeFrontier(o);
  REQUIRE(f->Admit(Entries({"http://a/1", "http://a/2", "http://a/3", "http://b/1",
                            "http://b/2"}),
                   *filter)
              .ok());
  f->OpenHost("http://a", std::nullopt);
  f->OpenHost("http://b", std::nullopt);
  std::vector<std::string> order;
  Clock::time_point t = kT0;
  for (int i = 0; i < 5; ++i) {
    Clock::time_point next{};
    auto lease = PopAt(*f, t, &next);
    if (!lease) {
      REQUIRE(next > t);
      t = next;
      lease = PopAt(*f, t);
    }
    REQUIRE(lease);
    order.push_back(lease->entry.url);
    f->Done(*lease, t, 0.01);
  }
  CHECK(order == std::vector<std::string>{"http://a/1", "http://b/1", "http://a/2",
                                          "http://b/2", "http://a/3"});
  CHECK(f->Empty());
}

TEST_CASE("A redirect's target goes first among its host's URLs of its depth",
          "[frontier]") {
  auto filter = MakeFilter();
  auto f = NoDelay();
  REQUIRE(f->Admit(Entries({"http://a/1", "http://a/2"}), *filter).ok());
  REQUIRE(f->Admit(Entries({"http://a/shallow"}, 0), *filter).ok());
  std::vector<UrlEntry> hop = Entries({"http://a/to"});
  hop[0].redirects = 1;  // a/x (depth 1) answered 301 -> a/to
  REQUIRE(f->Admit(hop, *filter).ok());
  f->OpenHost("http://a", std::nullopt);
  std::vector<std::string> order;
  while (auto lease = PopAt(*f, kT0)) {
    order.push_back(lease->entry.url);
    f->Done(*lease, kT0, 0);
  }
  // Depth first still (a shallower URL before it), then the hop, then the
  // URLs of its depth queued before it.
  CHECK(order == std::vector<std::string>{"http://a/shallow", "http://a/to", "http://a/1",
                                          "http://a/2"});
}

// Hosts a, b, c (in that order) with 1, 4 and 2 URLs queued once each has
// fetched one (0.1 s a request, no delay), all due at `t`.
std::unique_ptr<Frontier> ThreeHostsDue(bool most_work_first, dedup::Filter& filter,
                                        Clock::time_point t) {
  auto f = NoDelay(most_work_first);
  REQUIRE(f->Admit(Entries({"http://a/0", "http://b/0", "http://c/0", "http://a/1",
                            "http://b/1", "http://b/2", "http://b/3", "http://b/4",
                            "http://c/1", "http://c/2"}),
                   filter)
              .ok());
  for (const char* h : {"http://a", "http://b", "http://c"}) f->OpenHost(h, std::nullopt);
  std::vector<Lease> first;
  for (int i = 0; i < 3; ++i) {
    auto lease = PopAt(*f, t);
    REQUIRE(lease);
    CHECK(lease->entry.url.back() == '0');
    first.push_back(*lease);
  }
  for (const Lease& l : first) f->Done(l, t, 0.1);
  return f;
}

std::vector<std::string> HostsInPopOrder(Frontier& f, Clock::time_point t) {
  std::vector<std::string> hosts;
  while (auto lease = PopAt(f, t)) hosts.push_back(lease->host);
  return hosts;
}

TEST_CASE("Of the hosts due, the one with the most work left goes first; waiting gains",
          "[frontier]") {
  auto filter = MakeFilter();
  SECTION("most work first: b (4 x 0.1 s), c (2 x 0.1 s), then a") {
    auto f = ThreeHostsDue(true, *filter, kT0);
    CHECK(HostsInPopOrder(*f, kT0 + milliseconds(1)) ==
          std::vector<std::string>{"http://b", "http://c", "http://a"});
  }
  SECTION("off: the host due longest ago (the first known on a tie)") {
    auto f = ThreeHostsDue(false, *filter, kT0);
    CHECK(HostsInPopOrder(*f, kT0 + milliseconds(1)) ==
          std::vector<std::string>{"http://a", "http://b", "http://c"});
  }
  SECTION("a host due longer ago than the others' extra work goes before them") {
    auto f = ThreeHostsDue(true, *filter, kT0);
    // b's and c's next requests: due at once again, their queues 3 and 1.
    auto b = PopAt(*f, kT0);
    auto c = PopAt(*f, kT0);
    REQUIRE(b);
    REQUIRE(c);
    CHECK(b->host == "http://b");
    CHECK(c->host == "http://c");
    f->Done(*b, kT0 + milliseconds(500), 0.1);
    f->Done(*c, kT0 + milliseconds(500), 0.1);
    // At 0.5 s, a has been due 0.5 s with 0.1 s of work: more than b's
    // 0.3 s, so a goes first, then b, then c.
    CHECK(HostsInPopOrder(*f, kT0 + milliseconds(500)) ==
          std::vector<std::string>{"http://a", "http://b", "http://c"});
  }
}

// Drives `f` on a fake clock with 16 connections and 0.1 s a request
// until every URL was handed out. Returns each host's first hand-out
// (seconds) and, in `big_held_s`, the connection-seconds "http://big" held
// in the first `until_s` seconds.
std::map<std::string, double> DriveFair(Frontier& f, size_t urls, double until_s,
                                        double* big_held_s) {
  std::multimap<Clock::time_point, Lease> running;  // by end
  std::map<std::string, double> first;
  Clock::time_point t = kT0;
  for (size_t pops = 0; pops < urls;) {
    while (running.size() < 16) {
      auto lease = PopAt(f, t);
      if (!lease) break;
      ++pops;
      const double at = std::chrono::duration<double>(t - kT0).count();
      if (lease->host == "http://big" && at < until_s)
        *big_held_s += std::min(0.1, until_s - at);
      first.emplace(lease->host, at);
      running.emplace(t + milliseconds(100), std::move(*lease));
    }
    REQUIRE_FALSE(running.empty());
    auto next = running.begin();
    t = next->first;
    f.Done(next->second, t, 0.1);
    running.erase(next);
  }
  return first;
}

TEST_CASE(
    "Fair between hosts: with connections the limit, small hosts get their first page "
    "within the bound while a host of 10^4 URLs keeps its connections",
    "[frontier]") {
  // 16 connections, 0.1 s a request, no politeness delay, up to 16 at
  // once per host: one host of 10,000 URLs and `small` hosts of 10 each,
  // all due at 0.
  const int small = GENERATE(50, 1000);
  auto filter = MakeFilter();
  FrontierOptions o;
  o.min_delay_s = 0;
  o.max_connections_per_host = 16;
  o.max_connections_per_ip = 16;
  o.max_memory_urls = 1'000'000;
  auto f = MakeFrontier(o);
  std::vector<std::string> urls;
  for (int i = 0; i < 10'000; ++i) urls.push_back("http://big/" + std::to_string(i));
  for (int h = 0; h < small; ++h)
    for (int i = 0; i < 10; ++i)
      urls.push_back("http://s" + std::to_string(h) + "/" + std::to_string(i));
  REQUIRE(f->Admit(Entries(urls), *filter).ok());
  f->OpenHost("http://big", std::nullopt, kT0);
  for (int h = 0; h < small; ++h)
    f->OpenHost("http://s" + std::to_string(h), std::nullopt, kT0);
  double big_held_s = 0;
  std::map<std::string, double> first = DriveFair(*f, urls.size(), 9, &big_held_s);
  REQUIRE(first.size() == static_cast<size_t>(small) + 1);
  double last_first = 0;
  for (const auto& [host, at] : first) last_first = std::max(last_first, at);
  INFO(small << " small hosts: the last one's first page at " << last_first
             << " s; the big host held " << big_held_s << " connection-s of 9 s x 16");
  if (small == 50) {
    // The bound: a due host in the pick's window (the 64 due earliest) is
    // served once it has waited kMaxWorkS (10 s) longer than the others
    // there. Unbounded, the big host's weight (10,000 x 0.1 s) kept every
    // connection until it drained: 62.5 s.
    CHECK(last_first <= 10.0 + 0.5);
    CHECK(big_held_s >= 16 * 8.9);  // all 16 connections meanwhile
  } else {
    // 1,000 small hosts fill the window: the big host, due later than
    // they, waits its turn there, and they go at 160 a second.
    CHECK(last_first <= 1000 / 160.0 + 1);
  }
}

TEST_CASE(
    "Revisits wait behind a host's new URLs, FIFO among themselves whatever their depth; "
    "recurring revisits do not starve new URLs",
    "[frontier]") {
  auto filter = MakeFilter();
  auto f = MakeFrontier(FrontierOptions{});
  // Revisits queued in due order: a deep one, then shallow ones.
  for (auto [url, depth] : std::vector<std::pair<std::string, uint32_t>>{
           {"http://a/deep", 3}, {"http://a/", 0}, {"http://a/p1", 1}}) {
    UrlEntry e{url, depth, "", 0};
    e.revisit = true;
    REQUIRE(f->Requeue(std::move(e)).ok());
  }
  REQUIRE(f->Admit(Entries({"http://a/new2"}, 2), *filter).ok());
  REQUIRE(f->Admit(Entries({"http://a/new1"}, 1), *filter).ok());
  f->OpenHost("http://a", std::nullopt);
  std::vector<std::string> order;
  Clock::time_point t = kT0;
  for (int i = 0; i < 5; ++i) {
    auto lease = PopAt(*f, t);
    REQUIRE(lease);
    order.push_back(lease->entry.url);
    CHECK(lease->entry.revisit == (i == 2 || i == 4));
    f->Done(*lease, t, 0);
    t += seconds(1);
    // A revisit fetched is due again at once (the history's shortest
    // interval): queued behind, never ahead of, a new URL found meanwhile.
    if (i == 2) REQUIRE(f->Admit(Entries({"http://a/new3"}, 3), *filter).ok());
    if (lease->entry.revisit) {
      UrlEntry again = lease->entry;
      REQUIRE(f->Requeue(std::move(again)).ok());
    }
  }
  CHECK(order == std::vector<std::string>{"http://a/new1", "http://a/new2",
                                          "http://a/deep", "http://a/new3", "http://a/"});
}

TEST_CASE("Politeness: min_delay, Crawl-delay (capped) and k x response time",
          "[frontier]") {
  auto filter = MakeFilter();
  FrontierOptions o;
  o.min_delay_s = 2;
  o.max_crawl_delay_s = 10;
  o.response_factor = 5;
  auto f = MakeFrontier(o);
  std::vector<std::string> urls;
  for (int i = 0; i < 6; ++i) urls.push_back("http://a/" + std::to_string(i));
  REQUIRE(f->Admit(Entries(urls), *filter).ok());
  f->OpenHost("http://a", std::nullopt);

  auto l1 = PopAt(*f, kT0);
  REQUIRE(l1);
  CHECK_FALSE(PopAt(*f, kT0 + seconds(100)));  // one connection: busy until Done
  f->Done(*l1, kT0 + milliseconds(500),
          0.1);  // delay = max(2, 0, 0.5) = 2 s after the end
  Clock::time_point next{};
  CHECK_FALSE(PopAt(*f, kT0 + milliseconds(2400), &next));
  CHECK(next == kT0 + milliseconds(2500));
  auto l2 = PopAt(*f, kT0 + milliseconds(2500));
  REQUIRE(l2);
  f->Done(*l2, kT0 + seconds(3), 1.0);  // 5 x 1 s response = 5 s
  CHECK_FALSE(PopAt(*f, kT0 + milliseconds(7999)));
  auto l3 = PopAt(*f, kT0 + seconds(8));
  REQUIRE(l3);

  f->OpenHost("http://a", 7.0);  // robots Crawl-delay: 7
  f->Done(*l3, kT0 + seconds(8), 0.0);
  CHECK_FALSE(PopAt(*f, kT0 + milliseconds(14999)));
  auto l4 = PopAt(*f, kT0 + seconds(15));
  REQUIRE(l4);

  f->OpenHost("http://a", 3600.0);  // capped at max_crawl_delay = 10
  f->Done(*l4, kT0 + seconds(15), 0.0);
  CHECK_FALSE(PopAt(*f, kT0 + milliseconds(24999)));
  CHECK(PopAt(*f, kT0 + seconds(25)));
}

// One open host "http://a" with `n` queued URLs on the fake clock. Step
// hands out its next URL at `t`, ends it with `end`, and returns the seconds
// until the host is due again (then `t` moves there).
struct OneHost {
  OneHost(const FrontierOptions& o, int n) : f(MakeFrontier(o)) {
    std::vector<std::string> urls;
    for (int i = 0; i < n; ++i) urls.push_back("http://a/" + std::to_string(i));
    REQUIRE(f->Admit(Entries(urls), *filter).ok());
    f->OpenHost("http://a", std::nullopt);
  }
  double Step(const std::function<void(const Lease&)>& end) {
    auto lease = PopAt(*f, t);
    REQUIRE(lease);
    end(*lease);
    Clock::time_point next{};
    CHECK_FALSE(PopAt(*f, t, &next));
    double waited = std::chrono::duration<double>(next - t).count();
    t = next;
    return waited;
  }
  std::unique_ptr<dedup::Filter> filter = MakeFilter();
  std::unique_ptr<Frontier> f;
  Clock::time_point t = kT0;
};

TEST_CASE("Host back-off: 429/503 doubles the host's delay up to a cap, answers halve it",
          "[frontier][backoff]") {
  FrontierOptions o;
  o.min_delay_s = 1;
  o.backoff_min_s = 1;
  o.backoff_max_s = 10;
  OneHost h(o, 20);
  auto fetch = [&](HostSignal signal) {
    return h.Step([&](const Lease& l) { h.f->Done(l, h.t, 0, signal); });
  };
  CHECK(fetch(HostSignal::kAnswered) == Approx(1));    // the usual delay
  CHECK(fetch(HostSignal::kOverloaded) == Approx(2));  // doubled: twice the usual
  CHECK(fetch(HostSignal::kOverloaded) == Approx(4));
  CHECK(fetch(HostSignal::kOverloaded) == Approx(8));
  CHECK(h.f->Stats(h.t).hosts_backing_off == 1);
  CHECK(fetch(HostSignal::kOverloaded) == Approx(10));  // the cap
  CHECK(fetch(HostSignal::kOverloaded) == Approx(10));
  CHECK(fetch(HostSignal::kAnswered) == Approx(5));  // decays ...
  CHECK(fetch(HostSignal::kNone) == Approx(5));      // (says nothing about the host)
  CHECK(fetch(HostSignal::kAnswered) == Approx(2.5));
  CHECK(fetch(HostSignal::kAnswered) == Approx(1.25));
  CHECK(fetch(HostSignal::kAnswered) == Approx(1));  // ... back to the usual delay
  CHECK(h.f->Stats(h.t).hosts_backing_off == 0);

  // A retry after a 429 holds the host for the retry's back-off and doubles.
  Clock::time_point start = h.t;
  CHECK(h.Step([&](const Lease& l) {
    REQUIRE(h.f->Retry(l, start, 0, start + seconds(30), HostSignal::kOverloaded).ok());
  }) == Approx(30));
  CHECK(h.f->Stats(h.t).hosts_backing_off == 1);
}

TEST_CASE(
    "Parking: a host unreachable park_after times in a row waits park_s; its "
    "queue is kept",
    "[frontier][backoff]") {
  FrontierOptions o;
  o.min_delay_s = 1;
  o.park_after = 3;
  o.park_s = 100;
  OneHost h(o, 10);
  auto fail = [&] {
    return h.Step([&](const Lease& l) {
      REQUIRE(h.f->Retry(l, h.t, 0, h.t + seconds(2), HostSignal::kUnreachable).ok());
    });
  };
  CHECK(fail() == Approx(2));  // the retry's back-off
  CHECK(fail() == Approx(2));
  CHECK(h.f->Stats(h.t).hosts_parked == 0);
  CHECK(fail() == Approx(100));  // the third in a row: parked
  CHECK(h.f->Stats(h.t).hosts_parked == 1);
  CHECK(h.f->Parked("http://a"));
  CHECK(fail() == Approx(100));                // and again after each further failure
  CHECK(h.f->Stats(h.t).queued_memory == 10);  // nothing dropped
  // The host answers again: no longer parked, the usual delay.
  CHECK(h.Step([&](const Lease& l) { h.f->Done(l, h.t, 0, HostSignal::kAnswered); }) ==
        Approx(1));
  CHECK(h.f->Stats(h.t).hosts_parked == 0);
}

TEST_CASE("At most max_connections_per_host in flight; starts min_delay apart",
          "[frontier]") {
  auto filter = MakeFilter();
  FrontierOptions o;
  o.min_delay_s = 1;
  o.max_connections_per_host = 2;
  auto f = MakeFrontier(o);
  REQUIRE(f->Admit(Entries({"http://a/1", "http://a/2", "http://a/3"}), *filter).ok());
  f->OpenHost("http://a", std::nullopt);
  auto l1 = PopAt(*f, kT0);
  REQUIRE(l1);
  CHECK_FALSE(PopAt(*f, kT0 + milliseconds(999)));
  auto l2 = PopAt(*f, kT0 + seconds(1));
  REQUIRE(l2);
  CHECK_FALSE(PopAt(*f, kT0 + seconds(60)));  // two in flight
  CHECK(f->Stats(kT0 + seconds(60)).in_flight == 2);
  f->Done(*l1, kT0 + seconds(60), 0);
  CHECK(PopAt(*f, kT0 + seconds(61)));
}

TEST_CASE("Release frees a slot without a politeness delay", "[frontier]") {
  auto filter = MakeFilter();
  FrontierOptions o;
  o.min_delay_s = 0;
  o.max_crawl_delay_s = 100;
  auto f = MakeFrontier(o);
  REQUIRE(f->Admit(Entries({"http://a/1", "http://a/2"}), *filter).ok());
  f->OpenHost("http://a", 50.0);
  auto l1 = PopAt(*f, kT0);
  REQUIRE(l1);
  f->Release(*l1);  // not fetched: no Crawl-delay wait
  CHECK(PopAt(*f, kT0));
}

TEST_CASE("Defer puts the URL back at its host's head and holds the host until then",
          "[frontier]") {
  auto filter = MakeFilter();
  FrontierOptions o;
  o.min_delay_s = 0;
  auto f = MakeFrontier(o);
  REQUIRE(f->Admit(Entries({"http://a/1", "http://a/2", "http://b/1"}), *filter).ok());
  f->OpenHost("http://a", std::nullopt);
  f->OpenHost("http://b", std::nullopt);
  auto l1 = PopAt(*f, kT0);
  REQUIRE(l1);
  REQUIRE(l1->entry.url == "http://a/1");
  f->Defer(*l1, kT0 + seconds(5));
  CHECK(f->Stats(kT0).in_flight == 0);
  CHECK(f->Stats(kT0).queued_memory == 3);
  auto l2 = PopAt(*f, kT0 + seconds(1));  // a waits: b goes
  REQUIRE(l2);
  CHECK(l2->entry.url == "http://b/1");
  f->Done(*l2, kT0 + seconds(1), 0);
  Clock::time_point next{};
  CHECK_FALSE(PopAt(*f, kT0 + seconds(2), &next));
  CHECK(next == kT0 + seconds(5));
  auto l3 = PopAt(*f, kT0 + seconds(5));  // the deferred URL first, then the rest
  REQUIRE(l3);
  CHECK(l3->entry.url == "http://a/1");
  f->Done(*l3, kT0 + seconds(5), 0);
  auto l4 = PopAt(*f, kT0 + seconds(6));
  REQUIRE(l4);
  CHECK(l4->entry.url == "http://a/2");
  f->Defer(*l4, kT0);  // a lease deferred twice is ignored the second time
  f->Defer(*l4, kT0);
  CHECK(f->Stats(kT0).queued_memory == 1);
}

TEST_CASE(
    "DropHosts forgets the selected hosts' queued URLs, RAM and disk; InFlight counts "
    "theirs",
    "[frontier][spill]") {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("frontier-drop-" + std::to_string(::getpid())))
                              .string();
  std::filesystem::remove_all(dir);
  auto filter = MakeFilter();
  FrontierOptions o;
  o.min_delay_s = 0;
  o.max_memory_urls = 10;  // most of a's and b's URLs go to disk
  o.spill_dir = dir;
  auto f = MakeFrontier(o);
  // Over the 8,192 spill records buffered in RAM: written to the files.
  const uint64_t kPerHost = 5000;
  std::vector<std::string> urls;
  for (uint64_t i = 0; i < kPerHost; ++i) {
    urls.push_back("http://a/" + std::to_string(i));
    urls.push_back("http://b/" + std::to_string(i));
  }
  REQUIRE(f->Admit(Entries(urls), *filter).ok());
  REQUIRE(f->Stats(kT0).queued_disk > 0);
  f->OpenHost("http://a", std::nullopt);
  f->OpenHost("http://b", std::nullopt);
  auto is_a = [](std::string_view h) { return h == "http://a"; };
  auto lease = PopAt(*f, kT0);
  REQUIRE(lease);
  uint64_t a_in_flight = lease->entry.url.rfind("http://a/", 0) == 0 ? 1 : 0;
  CHECK(f->InFlight(is_a) == a_in_flight);
  // ForEachQueued: each host's queued URLs, RAM and disk, in flight not
  // counted (a cluster node's backlog by shard).
  std::map<std::string, uint64_t> queued;
  f->ForEachQueued([&](std::string_view h, uint64_t n) { queued[std::string(h)] += n; });
  CHECK(queued.size() == 2);
  CHECK(queued["http://a"] == kPerHost - a_in_flight);
  CHECK(queued["http://b"] == kPerHost - (1 - a_in_flight));
  uint64_t dropped = f->DropHosts(is_a);
  queued.clear();
  f->ForEachQueued([&](std::string_view h, uint64_t n) { queued[std::string(h)] += n; });
  CHECK(queued.size() == 1);  // a's are gone, and a host with none is not listed
  CHECK(queued.count("http://b") == 1);
  CHECK(dropped == kPerHost - a_in_flight);
  FrontierStats s = f->Stats(kT0);
  CHECK(s.queued_memory + s.queued_disk == kPerHost - (1 - a_in_flight));  // b's
  uint64_t by_depth = 0;
  for (const auto& [depth, n] : s.depths) by_depth += n;
  CHECK(by_depth == s.queued_memory + s.queued_disk);
  f->Done(*lease, kT0, 0);
  // Only b's URLs come out, all of them, in order.
  std::vector<std::string> got;
  for (uint64_t i = 0; i < 2 * kPerHost; ++i) {
    auto l = PopAt(*f, kT0 + seconds(i + 1));
    if (!l) break;
    got.push_back(l->entry.url);
    f->Done(*l, kT0 + seconds(i + 1), 0);
  }
  CHECK(got.size() == kPerHost - (1 - a_in_flight));
  for (const std::string& u : got) CHECK(u.rfind("http://b/", 0) == 0);
  CHECK(f->Empty());
  f->RemoveDrained();
  size_t left = 0;
  for (auto it = std::filesystem::directory_iterator(dir);
       it != std::filesystem::directory_iterator(); ++it)
    ++left;
  CHECK(left == 0);  // a's spill file went with RemoveDrained
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "Bounded memory: URLs beyond max_memory_urls spill to disk and come back in order",
    "[frontier][spill]") {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("frontier-spill-" + std::to_string(::getpid())))
                              .string();
  std::filesystem::remove_all(dir);
  {
    auto filter = MakeFilter();
    FrontierOptions o;
    o.min_delay_s = 0;
    o.max_memory_urls = 100;
    o.spill_chunk = 37;
    o.spill_dir = dir;
    auto f = MakeFrontier(o);
    std::map<std::string, std::vector<std::string>> expected;
    for (int batch = 0; batch < 40; ++batch) {
      std::vector<std::string> urls;
      for (int i = 0; i < 500; ++i) {
        std::string host = "http://h" + std::to_string(i % 3);
        std::string url = host + "/" + std::to_string(batch * 500 + i);
        urls.push_back(url);
        expected[host].push_back(url);
      }
      REQUIRE(f->Admit(Entries(urls), *filter).ok());
      FrontierStats st = f->Stats(kT0);
      CHECK(st.queued_memory <= 100 + 8192);  // the budget plus the spill write buffer
    }
    FrontierStats st = f->Stats(kT0);
    CHECK(st.queued_memory + st.queued_disk == 20'000);
    CHECK(st.queued_disk >= 20'000 - 100 - 8192);
    CHECK(st.spilled >= 20'000 - 100);
    for (const auto& [host, urls] : expected) f->OpenHost(host, std::nullopt);

    std::map<std::string, std::vector<std::string>> got;
    uint64_t peak_memory = 0;
    while (auto lease = PopAt(*f, kT0)) {
      got[lease->host].push_back(lease->entry.url);
      f->Done(*lease, kT0, 0);
      peak_memory = std::max(peak_memory, f->Stats(kT0).queued_memory);
    }
    CHECK(got == expected);  // every URL once, FIFO per host
    CHECK(peak_memory <= 100 + 8192);
    CHECK(f->Empty());
    CHECK(!std::filesystem::is_empty(dir));  // drained files wait for RemoveDrained
    f->RemoveDrained();
    CHECK(std::filesystem::is_empty(dir));  // drained spill files are removed
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("A spill directory that cannot be created is an error naming it",
          "[frontier][spill]") {
  auto filter = MakeFilter();
  FrontierOptions o;
  o.max_memory_urls = 1;
  o.spill_dir = "/proc/no-such-dir/frontier";
  auto f = MakeFrontier(o);
  std::vector<std::string> urls;
  for (int i = 0; i < 9000; ++i) urls.push_back("http://a/" + std::to_string(i));
  auto r = f->Admit(Entries(urls), *filter);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Status::Code::kIoError);
  CHECK_THAT(r.status().message(), Catch::Contains("/proc/no-such-dir/frontier"));
}

TEST_CASE("Options are validated", "[frontier]") {
  FrontierOptions o;
  o.max_memory_urls = 0;
  CHECK_FALSE(Frontier::Create(o).ok());
  o = {};
  o.max_connections_per_host = 0;
  CHECK_FALSE(Frontier::Create(o).ok());
  o = {};
  o.min_delay_s = -1;
  CHECK_FALSE(Frontier::Create(o).ok());
}

}  // namespace
}  // namespace crawler::frontier

namespace crawler::frontier {
namespace {

TEST_CASE(
    "ForEachEntry lists leased, queued and spilled URLs; a restored frontier hands them "
    "all out",
    "[frontier][checkpoint]") {
  std::string dir = (std::filesystem::temp_directory_path() /
                     ("frontier-image-" + std::to_string(::getpid())))
                        .string();
  std::filesystem::remove_all(dir);
  auto filter = MakeFilter();
  FrontierOptions o;
  o.max_memory_urls = 50;
  o.spill_dir = dir + "/a";
  o.min_delay_s = 0;
  auto f = MakeFrontier(o);
  std::vector<std::string> urls;
  for (int i = 0; i < 300; ++i)
    urls.push_back("http://h" + std::to_string(i % 3) + "/" + std::to_string(i));
  REQUIRE(f->Admit(Entries(urls, 2), *filter).ok());
  for (int h = 0; h < 3; ++h)
    f->OpenHost("http://h" + std::to_string(h),
                h == 1 ? std::optional(5.0) : std::nullopt);
  auto leased = PopAt(*f, kT0);  // in flight at the "checkpoint"
  REQUIRE(leased);
  CHECK(f->Stats(kT0).depths == std::vector<std::pair<uint32_t, uint64_t>>{{2, 299}});

  std::vector<HostImage> hosts;
  std::vector<std::pair<UrlEntry, bool>> entries;
  Status st = f->ForEachEntry(
      kT0,
      [&](const HostImage& h) {
        hosts.push_back(h);
        return Status::Ok();
      },
      [&](const UrlEntry& e, bool l) {
        entries.emplace_back(e, l);
        return Status::Ok();
      });
  REQUIRE(st.ok());
  REQUIRE(hosts.size() == 3);
  CHECK(hosts[0].open);
  REQUIRE(entries.size() == 300);
  CHECK(entries[0].second);  // the leased URL first
  CHECK(entries[0].first.url == leased->entry.url);
  std::set<std::string> seen;
  for (const auto& [e, l] : entries) seen.insert(e.url);
  CHECK(seen.size() == 300);

  o.spill_dir = dir + "/b";
  auto g = MakeFrontier(o);
  for (const HostImage& h : hosts) g->RestoreHost(h, kT0);
  for (auto& [e, l] : entries) REQUIRE(g->Requeue(e).ok());
  CHECK(g->Stats(kT0).spilled >= 250);  // beyond max_memory_urls
  std::set<std::string> popped;
  for (int round = 0; round < 1000 && !g->Empty(); ++round) {
    while (auto lease = PopAt(*g, kT0 + seconds(10 * round))) {
      popped.insert(lease->entry.url);
      g->Done(*lease, kT0 + seconds(10 * round), 0);
    }
  }
  CHECK(popped == seen);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace crawler::frontier
