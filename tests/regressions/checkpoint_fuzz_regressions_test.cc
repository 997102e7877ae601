// Regressions found by tests/fuzz/checkpoint_fuzz.
#include <xxhash.h>

#include <catch2/catch.hpp>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <string>

#include "crawler/checkpoint.h"

namespace crawler::checkpoint {
namespace {

TEST_CASE(
    "A sealed manifest with a negative error count loads (the count is ignored), not "
    "throws",
    "[checkpoint][regression]") {
  CheckpointInfo info;
  info.warc_file = "crawl-00000.warc.gz";
  std::string text = EncodeManifest(info, {});
  // Re-seal a variant whose counters.errors holds -1 (as the fuzzer did).
  std::string body = text.substr(0, text.rfind(",\"manifest_xxh3\""));
  size_t at = body.find("\"errors\":{}");
  REQUIRE(at != std::string::npos);
  body.replace(at, 11, "\"errors\":{\"timeout\":-1,\"refused\":2}");
  // The seal: the key, then XXH3-64 of everything before the hex digits.
  auto seal = [](std::string t) {
    t += ",\"manifest_xxh3\":\"";
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%016" PRIx64, XXH3_64bits(t.data(), t.size()));
    return t + hex + "\"}\n";
  };
  auto m = DecodeManifest(seal(body), "MANIFEST.json");
  REQUIRE(m.ok());
  CHECK(m->info.summary.errors.count("timeout") == 0);
  CHECK(m->info.summary.errors.at("refused") == 2);
}

}  // namespace
}  // namespace crawler::checkpoint
