// Politeness per address (frontier/frontier.h, SetAddress): hosts sharing an
// address share its request gap and its connection limit, on a fake clock.
#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "frontier/frontier.h"

namespace crawler::frontier {
namespace {
namespace ip_test {

using std::chrono::milliseconds;

const Clock::time_point kStart = Clock::time_point{} + std::chrono::hours(1);

FrontierOptions Options(uint32_t per_host, double ip_delay_s, uint32_t per_ip) {
  FrontierOptions o;
  o.max_connections_per_host = per_host;
  o.min_delay_ip_s = ip_delay_s;
  o.max_connections_per_ip = per_ip;
  return o;
}

struct Setup {
  explicit Setup(FrontierOptions o) {
    dedup::FilterOptions fo;
    fo.capacity = 10'000;
    fo.error_rate = 1e-6;
    filter = std::move(dedup::Filter::Create(fo)).value();
    o.min_delay_s = 0;
    f = std::move(Frontier::Create(o)).value();
  }
  // `pages` URLs on each of `hosts`, opened, at `address`.
  void Hosts(const std::vector<std::string>& hosts, const std::string& address,
             int pages = 3) {
    std::vector<UrlEntry> entries;
    for (const std::string& h : hosts)
      for (int i = 0; i < pages; ++i)
        entries.push_back(UrlEntry{h + "/" + std::to_string(i), 1, ""});
    REQUIRE(f->Admit(entries, *filter).ok());
    for (const std::string& h : hosts) {
      f->OpenHost(h, std::nullopt);
      f->SetAddress(h, address);
    }
  }
  std::optional<Lease> Pop(Clock::time_point t, Clock::time_point* next = nullptr) {
    auto r = f->Pop(t, next);
    REQUIRE(r.ok());
    return std::move(r).value();
  }
  std::unique_ptr<dedup::Filter> filter;
  std::unique_ptr<Frontier> f;
};

TEST_CASE("Per address: request starts min_delay_ip_s apart over all its hosts",
          "[frontier][ip]") {
  Setup s(Options(1, 1.0, 10));
  s.Hosts({"http://a", "http://b", "http://c"}, "10.0.0.1");
  s.Hosts({"http://d"}, "10.0.0.2", 1);
  // One from the shared address, one from the other; then nothing until the
  // shared address is due, whatever the hosts' own delays (0).
  std::optional<Lease> first = s.Pop(kStart);
  REQUIRE(first);
  std::optional<Lease> other = s.Pop(kStart);
  REQUIRE(other);
  CHECK(other->host == "http://d");
  s.f->Done(*first, kStart + milliseconds(10), 0.01, HostSignal::kAnswered);
  s.f->Done(*other, kStart + milliseconds(10), 0.01, HostSignal::kAnswered);
  Clock::time_point next{};
  CHECK_FALSE(s.Pop(kStart + milliseconds(30), &next));
  CHECK(next == kStart + std::chrono::seconds(1));  // a second after the start ...
  // ... but the address is due a second after that request's end (10 ms) too.
  CHECK_FALSE(s.Pop(kStart + std::chrono::seconds(1), &next));
  CHECK(next == kStart + milliseconds(1010));
  // Each second, one of a, b, c in turn: the eight pages left (a had three,
  // one fetched) in eight seconds.
  std::vector<std::string> order;
  for (int i = 1; i <= 8; ++i) {
    const Clock::time_point t = kStart + milliseconds(10) + std::chrono::seconds(i);
    CHECK_FALSE(s.Pop(t - milliseconds(1)).has_value());
    std::optional<Lease> l = s.Pop(t);
    REQUIRE(l);
    CHECK(l->host != "http://d");
    order.push_back(l->host);
    CHECK_FALSE(s.Pop(t).has_value());
    s.f->Done(*l, t, 0, HostSignal::kAnswered);  // answered at once
  }
  // In turn: no host twice before each other waiting host had its go.
  CHECK(std::vector<std::string>(order.begin(), order.begin() + 3) !=
        std::vector<std::string>(3, order[0]));
  for (size_t i = 3; i < 6; ++i) CHECK(order[i] == order[i - 3]);
  CHECK(std::set<std::string>(order.begin(), order.begin() + 3).size() == 3);
  CHECK_FALSE(s.Pop(kStart + std::chrono::seconds(30)).has_value());
  FrontierStats st = s.f->Stats(kStart + std::chrono::seconds(20));
  CHECK(st.addresses == 2);
  CHECK(st.hosts_waiting_ip == 0);
}

TEST_CASE("Per address: at most max_connections_per_ip in flight over its hosts",
          "[frontier][ip]") {
  Setup s(Options(1, 0, 2));
  s.Hosts({"http://a", "http://b", "http://c", "http://e"}, "10.0.0.1");
  std::optional<Lease> one = s.Pop(kStart), two = s.Pop(kStart);
  REQUIRE(one);
  REQUIRE(two);
  CHECK(one->host != two->host);
  CHECK_FALSE(s.Pop(kStart).has_value());
  CHECK(s.f->Stats(kStart).hosts_waiting_ip == 2);
  // A robots.txt fetch at the same address waits for a free connection too.
  CHECK_FALSE(s.f->TryStartAt("10.0.0.1", kStart));
  s.f->Done(*one, kStart + milliseconds(1), 0.001, HostSignal::kAnswered);
  CHECK(s.f->TryStartAt("10.0.0.1", kStart + milliseconds(1)));
  CHECK_FALSE(s.Pop(kStart + milliseconds(2)).has_value());
  s.f->EndAt("10.0.0.1", kStart + milliseconds(2));
  std::optional<Lease> three = s.Pop(kStart + milliseconds(3));
  REQUIRE(three);
  CHECK(three->host != one->host);
  CHECK(three->host != two->host);
  // Release (not fetched) frees the address's connection as well.
  s.f->Release(*two);
  CHECK(s.Pop(kStart + milliseconds(4)).has_value());
}

TEST_CASE(
    "Per address: a lease names its host's address, HoldAddress keeps every host there "
    "back until then (another machine's turn), Defer puts the URL back",
    "[frontier][ip]") {
  Setup s(Options(1, 0, 10));
  s.Hosts({"http://a", "http://b"}, "10.0.0.1", 2);
  s.Hosts({"http://d"}, "10.0.0.2", 1);
  std::optional<Lease> first = s.Pop(kStart);
  REQUIRE(first);
  CHECK(first->address == (first->host == "http://d" ? "10.0.0.2" : "10.0.0.1"));
  // The job said wait 500 ms at the shared address: this lease goes back
  // and neither host there is handed out before then; the other address is.
  std::optional<Lease> shared = first->address == "10.0.0.1" ? first : s.Pop(kStart);
  REQUIRE(shared);
  REQUIRE(shared->address == "10.0.0.1");
  const std::string held_url = shared->entry.url;
  s.f->Defer(*shared, kStart + milliseconds(500));
  s.f->HoldAddress("10.0.0.1", kStart + milliseconds(500));
  std::vector<std::string> before;
  Clock::time_point next{};
  for (std::optional<Lease> l; (l = s.Pop(kStart + milliseconds(499), &next));) {
    before.push_back(l->host);
    s.f->Done(*l, kStart + milliseconds(499), 0, HostSignal::kAnswered);
  }
  CHECK(before ==
        std::vector<std::string>(first->host == "http://d" ? 0 : 1, "http://d"));
  CHECK(next == kStart + milliseconds(500));
  std::optional<Lease> after = s.Pop(kStart + milliseconds(500));
  REQUIRE(after);
  CHECK(after->address == "10.0.0.1");
  // The deferred URL is first again on its host.
  if (after->host == shared->host) CHECK(after->entry.url == held_url);
  // A host whose address is not known yet: none in its lease.
  s.Hosts({"http://new"}, "", 1);
  std::optional<Lease> unknown;
  for (int i = 0; i < 10 && !(unknown && unknown->host == "http://new"); ++i)
    unknown = s.Pop(kStart + std::chrono::seconds(10 + i));
  REQUIRE(unknown);
  CHECK(unknown->host == "http://new");
  CHECK(unknown->address.empty());
}

TEST_CASE(
    "Per address: a lease deferred unfetched, or a start taken back, costs its host and "
    "address no delay; an end since stands",
    "[frontier][ip]") {
  FrontierOptions o = Options(1, 10, 1);  // 10 s between starts at the address
  Setup s(o);
  o.min_delay_s = 10;  // and between a host's starts
  s.f = std::move(Frontier::Create(o)).value();
  s.Hosts({"http://a"}, "10.0.0.1", 3);
  std::optional<Lease> first = s.Pop(kStart);
  REQUIRE(first);
  // Waiting a few ms for a turn from the job: no request was made, so
  // neither the host's 10 s nor the address's 10 s run from this pop.
  s.f->Defer(*first, kStart + milliseconds(2));
  CHECK_FALSE(s.Pop(kStart + milliseconds(1)).has_value());
  std::optional<Lease> again = s.Pop(kStart + milliseconds(2));
  REQUIRE(again);
  CHECK(again->entry.url == first->entry.url);
  // This one is fetched: the next start waits the 10 s.
  s.f->Done(*again, kStart + milliseconds(3), 0, HostSignal::kAnswered);
  CHECK_FALSE(s.Pop(kStart + std::chrono::seconds(9)).has_value());
  // A robots.txt start at another address taken back: the address is free
  // at once; one taken back after a real end there keeps the end's delay.
  CHECK(s.f->TryStartAt("10.0.0.2", kStart));
  s.f->UndoStartAt("10.0.0.2", kStart);
  CHECK(s.f->TryStartAt("10.0.0.2", kStart + milliseconds(1)));
  s.f->EndAt("10.0.0.2", kStart + milliseconds(2));
  CHECK_FALSE(s.f->TryStartAt("10.0.0.2", kStart + std::chrono::seconds(5)));
  CHECK(s.f->TryStartAt("10.0.0.2", kStart + std::chrono::seconds(11)));
  s.f->EndAt("10.0.0.2", kStart + std::chrono::seconds(12));
  // A hold that came after the start taken back stands too.
  CHECK(s.f->TryStartAt("10.0.0.2", kStart + std::chrono::seconds(22)));
  s.f->HoldAddress("10.0.0.2", kStart + std::chrono::seconds(45));
  s.f->UndoStartAt("10.0.0.2", kStart + std::chrono::seconds(22));
  CHECK_FALSE(s.f->TryStartAt("10.0.0.2", kStart + std::chrono::seconds(44)));
  CHECK(s.f->TryStartAt("10.0.0.2", kStart + std::chrono::seconds(45)));
}

TEST_CASE("Per address: a host that moves takes its fetches in flight along",
          "[frontier][ip]") {
  Setup s(Options(2, 0, 2));
  s.Hosts({"http://a"}, "10.0.0.1", 4);
  std::optional<Lease> a1 = s.Pop(kStart), a2 = s.Pop(kStart);
  REQUIRE(a1);
  REQUIRE(a2);
  s.Hosts({"http://b"}, "10.0.0.1", 4);
  CHECK_FALSE(s.Pop(kStart).has_value());  // the address's two connections are a's
  // It moves: its two fetches count at the new address, the old one is free.
  s.f->SetAddress(a1->host, "10.0.0.9");
  std::optional<Lease> b1 = s.Pop(kStart);
  REQUIRE(b1);
  CHECK(b1->host == "http://b");
  CHECK(s.f->TryStartAt("10.0.0.1", kStart));
  CHECK_FALSE(s.f->TryStartAt("10.0.0.9", kStart));
  s.f->Done(*a1, kStart + milliseconds(1), 0.001, HostSignal::kAnswered);
  CHECK(s.f->TryStartAt("10.0.0.9", kStart + milliseconds(1)));
}

TEST_CASE("Per address: a request that ended frees its address before its result is done",
          "[frontier][ip]") {
  Setup s(Options(1, 0.01, 1));
  s.Hosts({"http://a", "http://b"}, "10.0.0.1", 2);
  std::optional<Lease> first = s.Pop(kStart);
  REQUIRE(first);
  CHECK_FALSE(s.Pop(kStart + milliseconds(50)).has_value());  // one connection
  // Its response is in (parsing waits): the other host may go once
  // min_delay_ip_s has passed since that end, not before.
  s.f->Ended(*first, kStart + milliseconds(50));
  CHECK_FALSE(s.Pop(kStart + milliseconds(55)).has_value());
  std::optional<Lease> second = s.Pop(kStart + milliseconds(61));
  REQUIRE(second);
  CHECK(second->host != first->host);
  // Done later frees the host's slot, not the address's a second time.
  s.f->Done(*first, kStart + milliseconds(70), 0.01, HostSignal::kAnswered);
  CHECK_FALSE(s.Pop(kStart + milliseconds(200)).has_value());
  s.f->Ended(*second, kStart + milliseconds(200));
  s.f->Ended(*second, kStart + milliseconds(200));  // twice: once counted
  s.f->Done(*second, kStart + milliseconds(200), 0.01, HostSignal::kAnswered);
  CHECK(s.Pop(kStart + milliseconds(211)).has_value());
  CHECK_FALSE(s.Pop(kStart + milliseconds(300)).has_value());
}

TEST_CASE(
    "Per address: a record no host refers to is kept while its politeness binds, then "
    "dropped and its slot reused",
    "[frontier][ip]") {
  Setup s(Options(1, 10.0, 10));
  s.Hosts({"http://a"}, "10.0.0.1", 1);
  REQUIRE(s.f->TryStartAt("10.0.0.1", kStart));
  s.f->EndAt("10.0.0.1", kStart);           // 10.0.0.1's next start: kStart + 10 s
  s.f->SetAddress("http://a", "10.0.0.2");  // no host at 10.0.0.1 any more
  // New addresses come (each looks at the idle records): 10.0.0.1's is kept
  // while its gap binds, so a request there still waits.
  s.Hosts({"http://b", "http://c"}, "10.0.0.3", 1);
  s.Hosts({"http://d"}, "10.0.0.4", 1);
  CHECK(s.f->Stats(kStart).addresses == 4);
  CHECK_FALSE(s.f->TryStartAt("10.0.0.1", kStart + std::chrono::seconds(1)));
  // Past its gap (a request's end elsewhere says so) it is dropped as new
  // addresses come: the records stay as many as the addresses hosts have.
  const Clock::time_point later = kStart + std::chrono::seconds(20);
  s.f->EndAt("10.0.0.1", later);
  REQUIRE(s.f->TryStartAt("10.0.0.3", later));
  s.f->EndAt("10.0.0.3", later);
  for (int i = 0; i < 20; ++i)
    s.f->SetAddress("http://d", "10.0.1." + std::to_string(i));  // d moves on and on
  CHECK(s.f->Stats(later).addresses <= 4);  // a, b and c's, d's, one idle at most
}

}  // namespace ip_test
}  // namespace
}  // namespace crawler::frontier
