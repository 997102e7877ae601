// frontier/image.h: frontier.bin round trip, golden bytes, damaged input.
#include "frontier/image.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>

namespace crawler::frontier {
namespace {

namespace fs = std::filesystem;

std::string Encode(const Frontier& f, Clock::time_point now) {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* mem = ::open_memstream(&buf, &size);
  REQUIRE(WriteFrontierImage(f, now, mem, "mem").ok());
  std::fclose(mem);
  std::string out(buf, size);
  std::free(buf);
  return out;
}

std::unique_ptr<Frontier> Make(const std::string& spill) {
  FrontierOptions o;
  o.spill_dir = spill;
  o.max_memory_urls = 2;  // the third URL spills: the image must read it back
  o.min_delay_s = 0;
  return std::move(Frontier::Create(o)).value();
}

TEST_CASE(
    "Frontier image: hosts, leased and queued (RAM and spilled) URLs survive a round "
    "trip",
    "[frontier][image]") {
  std::string dir =
      (fs::temp_directory_path() / ("image-" + std::to_string(::getpid()))).string();
  auto filter = std::move(dedup::Filter::Create(dedup::FilterOptions{})).value();
  auto f = Make(dir + "/a");
  auto now = Clock::now();
  auto admitted = f->Admit({{"http://a.test/1", 0, "", 0},
                            {"http://a.test/2", 1, "http://a.test/1", 0},
                            {"http://b.test:8080/x", 2, "http://a.test/", 3}},
                           *filter);
  REQUIRE(admitted.ok());
  f->OpenHost("http://a.test", 2.5, now);
  f->OpenHost("http://b.test:8080", std::nullopt);
  auto lease = f->Pop(now);
  REQUIRE(lease.ok());
  REQUIRE(lease->has_value());

  std::string bytes = Encode(*f, now);
  auto image = DecodeFrontierImage(bytes, "frontier.bin");
  REQUIRE(image.ok());
  CHECK(image->hosts.size() == 2);
  REQUIRE(image->urls.size() == 3);
  CHECK(image->urls[0].second);  // the leased one first
  CHECK(image->urls[0].first.url == (*lease)->entry.url);
  CHECK(image->LeasedPerHost().at((*lease)->host) == 1);
  std::multiset<std::string> urls;
  for (const auto& [e, leased] : image->urls) urls.insert(e.url);
  CHECK(urls == std::multiset<std::string>{"http://a.test/1", "http://a.test/2",
                                           "http://b.test:8080/x"});

  // Restored into a new frontier, then imaged again: the same bytes.
  auto g = Make(dir + "/b");
  REQUIRE(RestoreFrontier(std::move(image).value(), now, g.get()).ok());
  CHECK(g->Stats(now).queued_memory + g->Stats(now).queued_disk == 3);
  auto again = DecodeFrontierImage(Encode(*g, now), "frontier.bin");
  REQUIRE(again.ok());
  CHECK(again->urls.size() == 3);
  fs::remove_all(dir);
}

TEST_CASE(
    "Frontier image: revisits (record 'V', and spilled) keep their flag, kind and "
    "attempt through a round trip, and still come after the host's new URLs",
    "[frontier][image]") {
  std::string dir =
      (fs::temp_directory_path() / ("image-revisit-" + std::to_string(::getpid())))
          .string();
  auto filter = std::move(dedup::Filter::Create(dedup::FilterOptions{})).value();
  auto f = Make(dir + "/a");  // two URLs in RAM, the rest spilled
  auto now = Clock::now();
  UrlEntry page{"http://a.test/old", 1, "", 0};
  page.revisit = true;
  UrlEntry sitemap{"http://a.test/sitemap.xml", 0, "", 0};
  sitemap.revisit = true;
  sitemap.kind = UrlEntry::Kind::kSitemap;
  sitemap.attempt = 2;
  REQUIRE(f->Requeue(page).ok());
  REQUIRE(f->Requeue(sitemap).ok());
  UrlEntry spilled{"http://a.test/older", 2, "", 0};
  spilled.revisit = true;
  REQUIRE(f->Requeue(spilled).ok());  // spilled: the kind field's revisit bit
  auto image = DecodeFrontierImage(Encode(*f, now), "frontier.bin");
  REQUIRE(image.ok());
  std::map<std::string, UrlEntry> by_url;
  for (const auto& [e, leased] : image->urls) by_url[e.url] = e;
  REQUIRE(by_url.size() == 3);
  CHECK(by_url["http://a.test/old"].revisit);
  CHECK(by_url["http://a.test/old"].kind == UrlEntry::Kind::kPage);
  CHECK(by_url["http://a.test/sitemap.xml"].revisit);
  CHECK(by_url["http://a.test/sitemap.xml"].kind == UrlEntry::Kind::kSitemap);
  CHECK(by_url["http://a.test/sitemap.xml"].attempt == 2);
  CHECK(by_url["http://a.test/older"].revisit);
  CHECK(by_url["http://a.test/older"].depth == 2);

  // Restored (all in RAM here): a new URL still goes first.
  FrontierOptions o;
  o.spill_dir = dir + "/b";
  o.min_delay_s = 0;
  auto g = std::move(Frontier::Create(o)).value();
  REQUIRE(RestoreFrontier(std::move(image).value(), now, g.get()).ok());
  REQUIRE(g->Admit({{"http://a.test/new", 3, "http://a.test/", 0}}, *filter).ok());
  g->OpenHost("http://a.test", std::nullopt);
  auto lease = g->Pop(now);
  REQUIRE(lease.ok());
  REQUIRE(lease->has_value());
  CHECK((*lease)->entry.url == "http://a.test/new");
  CHECK_FALSE((*lease)->entry.revisit);
  fs::remove_all(dir);
}

TEST_CASE(
    "Frontier image: a URL whose fetch is retried keeps its attempt count (record 'R') "
    "through a round trip; Retry queues it last and holds the host as asked",
    "[frontier][image][retry]") {
  std::string dir =
      (fs::temp_directory_path() / ("image-retry-" + std::to_string(::getpid())))
          .string();
  auto filter = std::move(dedup::Filter::Create(dedup::FilterOptions{})).value();
  auto f = Make(dir + "/a");
  auto now = Clock::now();
  REQUIRE(
      f->Admit({{"http://a.test/1", 0, "", 0}, {"http://a.test/2", 0, "", 0}}, *filter)
          .ok());
  f->OpenHost("http://a.test", std::nullopt);
  auto lease = f->Pop(now);
  REQUIRE(lease.ok());
  REQUIRE(lease->has_value());
  REQUIRE((*lease)->entry.url == "http://a.test/1");
  REQUIRE(
      f->Retry(**lease, now, 0, now + std::chrono::seconds(5), HostSignal::kOverloaded)
          .ok());
  auto held = f->Pop(now + std::chrono::seconds(4));  // the host waits its back-off
  REQUIRE(held.ok());
  CHECK_FALSE(held->has_value());

  auto image = DecodeFrontierImage(Encode(*f, now), "frontier.bin");
  REQUIRE(image.ok());
  REQUIRE(image->urls.size() == 2);
  CHECK(image->urls[0].first.url == "http://a.test/2");
  CHECK(image->urls[0].first.attempt == 0);
  CHECK(image->urls[1].first.url == "http://a.test/1");  // at its host's tail
  CHECK(image->urls[1].first.attempt == 1);
  CHECK_FALSE(image->urls[1].second);

  auto g = Make(dir + "/b");
  REQUIRE(RestoreFrontier(std::move(image).value(), now, g.get()).ok());
  auto second = g->Pop(now + std::chrono::seconds(6));
  REQUIRE(second.ok());
  REQUIRE(second->has_value());
  CHECK((*second)->entry.url == "http://a.test/2");
  g->Done(**second, now + std::chrono::seconds(6), 0);
  auto again = g->Pop(now + std::chrono::seconds(7));
  REQUIRE(again.ok());
  REQUIRE(again->has_value());
  CHECK((*again)->entry.url == "http://a.test/1");
  CHECK((*again)->entry.attempt == 1);
  // Alone in its host's queue: the host is held even without hold_host.
  REQUIRE(g->Retry(**again, now, 0, now + std::chrono::seconds(20), HostSignal::kAnswered)
              .ok());
  auto none = g->Pop(now + std::chrono::seconds(19));
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  auto twice = DecodeFrontierImage(Encode(*g, now), "frontier.bin");
  REQUIRE(twice.ok());
  REQUIRE(twice->urls.size() == 1);
  CHECK(twice->urls[0].first.attempt == 2);
  fs::remove_all(dir);
}

TEST_CASE(
    "Frontier image and spill: a sitemap (record 'S') stays a sitemap through disk and "
    "a round trip",
    "[frontier][image][sitemap]") {
  std::string dir =
      (fs::temp_directory_path() / ("image-s-" + std::to_string(::getpid()))).string();
  auto filter = std::move(dedup::Filter::Create(dedup::FilterOptions{})).value();
  auto f = Make(dir + "/a");  // max_memory_urls 2: the rest spills
  // Enough to pass the spill's write buffer (8,192): records go to disk.
  std::vector<UrlEntry> entries;
  for (int i = 0; i < 9000; ++i) {
    UrlEntry e{"http://a.test/" + std::to_string(i), 0, "http://a.test/robots.txt", 0};
    if (i % 3 == 0) e.kind = UrlEntry::Kind::kSitemap;
    entries.push_back(std::move(e));
  }
  REQUIRE(f->Admit(entries, *filter).ok());
  auto now = Clock::now();
  CHECK(f->Stats(now).queued_disk > 8000);
  auto image = DecodeFrontierImage(Encode(*f, now), "frontier.bin");
  REQUIRE(image.ok());
  REQUIRE(image->urls.size() == entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    INFO(image->urls[i].first.url);
    REQUIRE(image->urls[i].first.url == entries[i].url);
    REQUIRE(image->urls[i].first.kind == entries[i].kind);
  }
  // Restored (spilling again) and handed out: each keeps its kind.
  auto g = Make(dir + "/b");
  REQUIRE(RestoreFrontier(std::move(image).value(), now, g.get()).ok());
  g->OpenHost("http://a.test", std::nullopt);
  size_t sitemaps = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    auto lease = g->Pop(now);
    REQUIRE(lease.ok());
    REQUIRE(lease->has_value());
    REQUIRE((*lease)->entry.url == entries[i].url);
    REQUIRE((*lease)->entry.kind == entries[i].kind);
    sitemaps += (*lease)->entry.kind == UrlEntry::Kind::kSitemap ? 1 : 0;
    g->Done(**lease, now, 0);
  }
  CHECK(sitemaps == 3000);
  fs::remove_all(dir);
}

TEST_CASE("Frontier image: golden bytes of an empty frontier", "[frontier][image]") {
  std::string dir =
      (fs::temp_directory_path() / ("image-g-" + std::to_string(::getpid()))).string();
  auto f = Make(dir);
  std::string golden = std::string("CRWLFRNT") +
                       std::string("\x03\x00\x00\x00\x00\x00\x00\x00", 8) + "E" +
                       std::string(24, '\0');
  CHECK(Encode(*f, Clock::now()) == golden);
  // Version 2 (before 'F' records: two counts at the end) still loads.
  std::string v2 = std::string("CRWLFRNT") +
                   std::string("\x02\x00\x00\x00\x00\x00\x00\x00", 8) + "E" +
                   std::string(16, '\0');
  auto old = DecodeFrontierImage(v2, "frontier.bin");
  REQUIRE(old.ok());
  CHECK(old->Urls() == 0);
  fs::remove_all(dir);
}

TEST_CASE(
    "Frontier image: every truncation and a flipped tag are rejected with the file's "
    "name",
    "[frontier][image]") {
  std::string dir =
      (fs::temp_directory_path() / ("image-d-" + std::to_string(::getpid()))).string();
  auto filter = std::move(dedup::Filter::Create(dedup::FilterOptions{})).value();
  auto f = Make(dir);
  REQUIRE(f->Admit({{"http://a.test/1", 0, "", 0}}, *filter).ok());
  std::string bytes = Encode(*f, Clock::now());
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = DecodeFrontierImage(bytes.substr(0, n), "x/frontier.bin");
    INFO("cut at " << n);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().rfind("x/frontier.bin: ", 0) == 0);
  }
  std::string bad = bytes;
  bad[16] = 'Z';  // the first record's tag
  CHECK(DecodeFrontierImage(bad, "f").status().code() == Status::Code::kCorruption);
  bad = bytes;
  bad[8] = 9;  // version
  CHECK(DecodeFrontierImage(bad, "f").status().code() == Status::Code::kBadVersion);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace crawler::frontier
