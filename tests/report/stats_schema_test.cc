// The typed JSON schemas (crawler/src/stats_schema.h) and the lenient reader
// (crawler/src/json_fields.h).
#include "report/stats_schema.h"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "output/json_fields.h"

namespace crawler::report {
namespace {

namespace json = boost::json;
using output::json_fields::ReadLenient;

StatsReport Sample() {
  StatsReport r;
  r.updated_unix = 1700000000.5;
  r.running = true;
  r.out = "/tmp/out";
  r.dedup.variant = "cuckoo";
  r.dedup.items = 12345;
  r.dedup.estimated_fpr = 0.00123;
  r.dedup.fullest_stripes = {{3, 0.5, 100, 2, 0.001}, {1, 0.25, 50, 1, 0.0005}};
  r.frontier.queued_disk = 77;
  r.frontier.depths = {{0, 1}, {1, 40}};
  r.crawl.fetched = 900;
  r.crawl.status_4xx = 12;
  r.crawl.errors = {{"timeout", 3}, {"connect", 1}};
  r.rates.pages = 910;
  r.rates.pages_per_s_last_minute = 42.5;
  r.rates.top_hosts = {{"a.test", 600}, {"b.test", 300}};
  r.checkpoint.sequence = 9;
  r.checkpoint.max_pause_ms = 3.25;
  return r;
}

TEST_CASE("StatsReport: written and read back field for field", "[engine][stats]") {
  StatsReport in = Sample();
  json::object o = ToJson(in);
  // "crawl" is one flat object: the counts and the rates side by side.
  REQUIRE(o.at("crawl").is_object());
  CHECK(o.at("crawl").as_object().at("fetched").as_uint64() == 900);
  CHECK(o.at("crawl").as_object().at("pages").as_uint64() == 910);
  CHECK_FALSE(o.contains("rates"));

  StatsReport out = StatsReportFromJson(json::parse(json::serialize(o)));
  CHECK(out.updated_unix == in.updated_unix);
  CHECK(out.running);
  CHECK(out.out == "/tmp/out");
  CHECK(out.dedup.variant == "cuckoo");
  CHECK(out.dedup.items == 12345);
  CHECK(out.dedup.estimated_fpr == 0.00123);
  REQUIRE(out.dedup.fullest_stripes.size() == 2);
  CHECK(out.dedup.fullest_stripes[0].stripe == 3);
  CHECK(out.dedup.fullest_stripes[1].fill == 0.25);
  CHECK(out.frontier.queued_disk == 77);
  REQUIRE(out.frontier.depths.size() == 2);
  CHECK(out.frontier.depths[1].urls == 40);
  CHECK(out.crawl.fetched == 900);
  CHECK(out.crawl.status_4xx == 12);
  CHECK(out.crawl.errors == in.crawl.errors);
  CHECK(out.rates.pages == 910);
  CHECK(out.rates.pages_per_s_last_minute == 42.5);
  REQUIRE(out.rates.top_hosts.size() == 2);
  CHECK(out.rates.top_hosts[0].host == "a.test");
  CHECK(out.rates.top_hosts[1].fetched == 300);
  CHECK(out.checkpoint.sequence == 9);
  CHECK(out.checkpoint.max_pause_ms == 3.25);
}

TEST_CASE("ReadLenient: missing or mistyped members keep their defaults",
          "[engine][stats]") {
  json::value v = json::parse(R"({
    "pages": -5, "elapsed_s": "soon", "pages_per_s": 7,
    "top_hosts": [{"host": "a", "fetched": 2}, 17, {"host": 3, "fetched": 1.5}],
    "unknown": {"nested": true}
  })");
  CrawlRates r;
  r.pages = 99;
  r.elapsed_s = 1.5;
  CHECK(ReadLenient(v, r));
  CHECK(r.pages == 99);                     // negative: ignored
  CHECK(r.elapsed_s == 1.5);                // a string: ignored
  CHECK(r.pages_per_s == 7.0);              // an integer reads as a double
  CHECK(r.pages_per_s_last_minute == 0.0);  // missing
  // 17 is not an object: left out; the third keeps its defaults field by field.
  REQUIRE(r.top_hosts.size() == 2);
  CHECK(r.top_hosts[0].host == "a");
  CHECK(r.top_hosts[0].fetched == 2);
  CHECK(r.top_hosts[1].host.empty());
  CHECK(r.top_hosts[1].fetched == 0);

  CHECK_FALSE(ReadLenient(json::value("not an object"), r));
  uint32_t small = 5;
  CHECK_FALSE(ReadLenient(json::value(uint64_t{1} << 40), small));  // out of range
  CHECK(small == 5);
  std::map<std::string, uint64_t> errors;
  CHECK(ReadLenient(json::parse(R"({"timeout": 2, "dns": -1, "tls": 0.5})"), errors));
  CHECK(errors == std::map<std::string, uint64_t>{{"timeout", 2}});
}

TEST_CASE("SeriesPoint: one line of stats-series.jsonl", "[engine][stats]") {
  SeriesPoint p{12.5, 100, 8.0, 400, 0.001, 0.01, 55};
  json::value v = json::value_from(p);
  for (const char* key :
       {"t", "pages", "pages_per_s", "dedup_items", "fpr", "fpr_bound", "queued"}) {
    CHECK(v.as_object().contains(key));
  }
  SeriesPoint back = output::json_fields::ReadLenient<SeriesPoint>(v);
  CHECK(back.t == 12.5);
  CHECK(back.queued == 55);
  CHECK(back.fpr_bound == 0.01);
}

}  // namespace
}  // namespace crawler::report
