// Inputs the fuzzers found (tests/fuzz/), kept as tests once fixed.
#include <catch2/catch.hpp>
#include <string>

#include "parsers/url.h"
#include "url_result.h"

namespace crawler::parsers {
namespace {

using testing::UrlOf;

UrlOptions AllLossy() {
  UrlOptions o;
  o.sort_query = o.strip_tracking = o.strip_session_ids = o.strip_www = true;
  return o;
}

// url_fuzz, first CI run: with strip_session_ids, "..;jsessionid" was a plain
// segment during dot removal and became ".." only after the id was stripped,
// so normalizing twice changed the URL again.
TEST_CASE(
    "Regression: session-id stripping before dot segments keeps normalization idempotent",
    "[parsers][url][regression]") {
  const std::string input =
      "https://c./c.-/..;jsessionid#;/c.-/..;jsessioni\x9c\xc4\xfe\xfc/p&bu%d&ps1";
  UrlResult once = NormalizeUrl(input, AllLossy());
  REQUIRE(once.ok());
  UrlResult twice = NormalizeUrl(UrlOf(once), AllLossy());
  REQUIRE(twice.ok());
  CHECK(UrlOf(twice) == UrlOf(once));
  CHECK(UrlOf(NormalizeUrl("http://a/b/..;jsessionid=1/c", AllLossy())) == "http://a/c");
}

// Found by url_fuzz in CI: leading C0 controls hid the scheme
// from NormalizeUrl's "special" check, so a "'" in the query stayed as is
// and only the second normalization encoded it ("%27").
TEST_CASE(
    "Regression: leading controls before an http scheme: the query's ' is %27 at once",
    "[parsers][url][regression]") {
  using namespace std::string_literals;
  const std::string input = "\0\0\0\0http://E////)Ex?./x=1'#f"s;  // NULs included
  REQUIRE(input.size() == 28);
  UrlResult once = NormalizeUrl(input);
  REQUIRE(once.ok());
  CHECK(UrlOf(once) == "http://e////)Ex?./x=1%27");
  CHECK(UrlOf(NormalizeUrl(UrlOf(once))) == UrlOf(once));
}

// Found by url_fuzz in CI: a carriage return inside the scheme
// ("http\r:") hid it from the same check (WHATWG drops tabs and newlines
// anywhere, and Clean did, but only after the check), with the same result.
TEST_CASE(
    "Regression: a tab or newline inside an http scheme: the query's ' is %27 at once",
    "[parsers][url][regression]") {
  for (const std::string input : {"http\r://a?'", "ht\ttp://a?'", "https\n\n://a/?x='"}) {
    INFO(input);
    UrlResult once = NormalizeUrl(input);
    REQUIRE(once.ok());
    CHECK(UrlOf(once).find('\'') == std::string::npos);
    CHECK(UrlOf(once).find("%27") != std::string::npos);
    CHECK(UrlOf(NormalizeUrl(UrlOf(once))) == UrlOf(once));
  }
}

}  // namespace
}  // namespace crawler::parsers
