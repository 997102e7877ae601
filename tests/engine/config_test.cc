// Config (crawler/config.h) and seeds (crawler/seeds.h): every shipped config
// loads; mistakes are errors naming file, line and key; --set overrides; bad
// seed lines are reported with their line numbers and skipped.
#include "crawler/config.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "crawler/seeds.h"

namespace crawler::engine {
namespace {

const std::string kConfigs = CRAWLER_SOURCE_DIR "/configs/";

class TempFile {
 public:
  explicit TempFile(const std::string& content)
      : path_((std::filesystem::temp_directory_path() /
               ("cfg-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++) +
                ".toml"))
                  .string()) {
    std::ofstream(path_) << content;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

TEST_CASE("Every shipped config loads; the variant configs differ only in [dedup]",
          "[engine][config]") {
  auto d = LoadConfig(kConfigs + "default.toml");
  REQUIRE(d.ok());
  CHECK(ConfigToToml(*d) ==
        ConfigToToml(Config{}));  // the file repeats the header's defaults
  CHECK(d->dedup.type == dedup::FilterType::kBloom);
  for (auto [name, type] : {std::pair{"bloom", dedup::FilterType::kBloom},
                            std::pair{"cuckoo", dedup::FilterType::kCuckoo},
                            std::pair{"counting", dedup::FilterType::kCounting}}) {
    INFO(name);
    auto c = LoadConfig(kConfigs + name + ".toml");
    INFO(c.status().ToString());
    REQUIRE(c.ok());
    CHECK(c->dedup.type == type);
    CHECK(dedup::Filter::Create(c->dedup).ok());
    Config same = *c;
    same.dedup = d->dedup;
    same.dedup_type_name = d->dedup_type_name;
    CHECK(ConfigToToml(same) == ConfigToToml(*d));
  }
}

TEST_CASE(
    "configs/archive.toml loads: page requisites, whole bodies, the CDXJ index, payloads "
    "stored once",
    "[engine][config]") {
  auto a = LoadConfig(kConfigs + "archive.toml");
  INFO(a.status().ToString());
  REQUIRE(a.ok());
  CHECK(a->crawl.include_assets);
  CHECK(a->output.cdxj);
  CHECK(a->fetch.max_body_bytes == 100u * 1024 * 1024);
  CHECK(a->dedup_payload);
  CHECK_FALSE(Config{}.dedup_payload);
  // Every other key as default.toml has it.
  Config same = *a;
  same.crawl.include_assets = false;
  same.dedup_payload = false;
  same.fetch.max_body_bytes = Config{}.fetch.max_body_bytes;
  CHECK(ConfigToToml(same) == ConfigToToml(Config{}));
}

TEST_CASE("Config mistakes name the file, the line and the key", "[engine][config]") {
  auto expect = [](const std::string& toml, const std::string& words) {
    TempFile f(toml);
    auto c = LoadConfig(f.path());
    INFO(toml);
    REQUIRE_FALSE(c.ok());
    CHECK(c.status().code() == Status::Code::kInvalidArgument);
    CHECK_THAT(c.status().message(), Catch::Contains(words));
    CHECK_THAT(c.status().message(), Catch::Contains(f.path()));
  };
  expect("[frontier]\nmin_delay_s = 1\nmax_memroy_urls = 5\n",
         ":3: frontier.max_memroy_urls: unknown key");
  expect("[crawlr]\nmax_depth = 1\n", ":2: crawlr.max_depth: unknown key");
  expect("[crawl]\nmax_depth = \"deep\"\n", ":2: crawl.max_depth: expected an integer");
  expect("[crawl]\nmax_depth = -1\n", "crawl.max_depth: must be in [0,");
  expect("[dedup]\ntype = \"quotient\"\n",
         "dedup.type: must be bloom, cuckoo or counting");
  expect("[dedup]\nerror_rate = 0.7\n", "dedup.error_rate: must be in");
  expect("[output]\nwarc_gzip_level = 0\n", "output.warc_gzip_level: must be in [1, 12]");
  expect("[output]\nwarc_gzip_level = 13\n",
         "output.warc_gzip_level: must be in [1, 12]");
  expect("[crawl]\nexclude = [\"(unclosed\"]\n", "crawl.exclude: invalid regex");
  expect("[crawl]\ninclude_assets = \"yes\"\n", "expected true or false");
  expect("max_depth = 3\n", ":1: max_depth: unknown key");
  expect("[crawl\n", "not valid TOML");
  TempFile cross("[dedup]\ntype = \"bloom\"\nallow_erase = true\n");
  auto c = LoadConfig(cross.path());
  REQUIRE_FALSE(c.ok());
  CHECK_THAT(c.status().message(), Catch::Contains("cannot erase"));
  TempFile resolve("[fetch]\nresolve = [\"h.test:80\"]\n");
  auto r = LoadConfig(resolve.path());
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::Contains("fetch.resolve: 'h.test:80'"));
  TempFile nameless("[cluster]\nredis = \"redis://127.0.0.1:6390\"\n");
  auto n = LoadConfig(nameless.path());
  REQUIRE_FALSE(n.ok());
  CHECK_THAT(n.status().message(), Catch::Contains("cluster.node"));
  CHECK(LoadConfig("", {"fetch.resolve=['h.test:80:127.0.0.1']"}).ok());
  auto lease = LoadConfig("", {"cluster.heartbeat_s=2", "cluster.lease_s=5"});
  REQUIRE_FALSE(lease.ok());
  CHECK_THAT(
      lease.status().message(),
      Catch::Contains("cluster.lease_s: must be at least 3 x cluster.heartbeat_s"));
  CHECK(LoadConfig("", {"cluster.heartbeat_s=0.5", "cluster.lease_s=1.5"}).ok());
  CHECK_FALSE(LoadConfig("", {"cluster.redis=http://x"}).ok());
  // The Redis password never goes into a config (it would be written to
  // OUT/start-config.toml and each checkpoint); the error does not repeat it,
  // from --set or from a file.
  auto pw = LoadConfig("", {"cluster.redis=redis://:hunter2@127.0.0.1:6390"});
  REQUIRE_FALSE(pw.ok());
  CHECK_THAT(pw.status().message(), Catch::Contains("CRAWLER_REDIS_PASSWORD"));
  CHECK_THAT(pw.status().message(), Catch::Contains("cluster.redis"));
  CHECK_THAT(pw.status().message(), !Catch::Contains("hunter2"));
  TempFile pw_file("[cluster]\nredis = \"redis://user:hunter2@127.0.0.1:6390\"\n");
  auto pf = LoadConfig(pw_file.path());
  REQUIRE_FALSE(pf.ok());
  CHECK_THAT(pf.status().message(), !Catch::Contains("hunter2"));
  // [recrawl]: the interval within its bounds, a known rule.
  auto bounds = LoadConfig("", {"recrawl.interval_s=10", "recrawl.min_interval_s=60"});
  REQUIRE_FALSE(bounds.ok());
  CHECK_THAT(
      bounds.status().message(),
      Catch::Contains("recrawl.interval_s: must be within [recrawl.min_interval_s"));
  auto adapt = LoadConfig("", {"recrawl.adapt=sometimes"});
  REQUIRE_FALSE(adapt.ok());
  CHECK_THAT(adapt.status().message(),
             Catch::Contains("recrawl.adapt: must be \"fixed\", \"adaptive\" or "
                             "\"change-rate\""));
  // With [cluster] (the URL history moves with its shard).
  auto both = LoadConfig("", {"recrawl.enabled=true",
                              "cluster.redis=redis://127.0.0.1:6390", "cluster.node=a"});
  CHECK(both.ok());
  auto on = LoadConfig("", {"recrawl.enabled=true", "recrawl.interval_s=2",
                            "recrawl.min_interval_s=0.5", "crawl.max_duration_s=30"});
  REQUIRE(on.ok());
  CHECK(on->recrawl.enabled);
  CHECK(on->recrawl.min_interval_s == 0.5);
  CHECK(on->crawl.max_duration_s == 30);
}

TEST_CASE("Config: --set overrides any key, as TOML or a bare string",
          "[engine][config]") {
  auto c =
      LoadConfig(kConfigs + "default.toml",
                 {"dedup.type=cuckoo", "dedup.allow_erase=true", "crawl.max_pages=50",
                  "frontier.min_delay_s=0", "crawl.exclude=['/private/']",
                  "crawl.user_agent=\"bot/1 (+http://x)\""});
  INFO(c.status().ToString());
  REQUIRE(c.ok());
  CHECK(c->dedup.type == dedup::FilterType::kCuckoo);
  CHECK(c->crawl.max_pages == 50);
  CHECK(c->frontier.min_delay_s == 0);
  CHECK(c->crawl.exclude == std::vector<std::string>{"/private/"});
  CHECK(c->crawl.user_agent == "bot/1 (+http://x)");
  for (auto [set, words] :
       {std::pair{"crawl.max_pages", "expected section.key=value"},
        std::pair{"nodot=1", "expected section.key=value"},
        std::pair{"crawl.nope=1", "crawl.nope: unknown key"},
        std::pair{"crawl.max_pages=lots", "crawl.max_pages: expected an integer"}}) {
    auto bad = LoadConfig("", {set});
    INFO(set);
    REQUIRE_FALSE(bad.ok());
    CHECK_THAT(bad.status().message(), Catch::Contains(words));
    CHECK_THAT(bad.status().message(), Catch::Contains("--set"));
  }
}

TEST_CASE(
    "Seeds: comments and blanks skipped, bad lines reported by number, duplicates merged",
    "[engine][seeds]") {
  TempFile f(
      "# my seeds\n"
      "http://Example.org/\n"
      "\n"
      "   # indented comment\n"
      "example.com/no-scheme\n"
      "http://example.org:80/\n"
      "ftp://files.example/\n"
      "https://b.example/start?x=1#frag\r\n");
  auto s = ReadSeeds(f.path(), {});
  REQUIRE(s.ok());
  CHECK(s->urls ==
        std::vector<std::string>{"http://example.org/", "https://b.example/start?x=1"});
  REQUIRE(s->problems.size() == 2);
  CHECK_THAT(s->problems[0], Catch::Contains(":5: no scheme"));
  CHECK_THAT(s->problems[1], Catch::Contains(":7: scheme 'ftp'"));

  TempFile none("# nothing\nnot a url\n");
  auto empty = ReadSeeds(none.path(), {});
  REQUIRE_FALSE(empty.ok());
  CHECK_THAT(empty.status().message(), Catch::Contains("no usable seed"));
  CHECK_THAT(empty.status().message(), Catch::Contains(":2:"));
  auto missing = ReadSeeds("/no/such/seeds.txt", {});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == Status::Code::kIoError);
}

}  // namespace
}  // namespace crawler::engine
