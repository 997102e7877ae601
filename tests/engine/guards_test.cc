// engine/url_guards.h: the trap guards on a URL's shape. (The budgets per
// registered domain are HostTable's: host_table_test.cc.)
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "engine/url_guards.h"

namespace crawler::engine {
namespace {

TEST_CASE("UrlGuards: length, path segments, repeated runs, query parameters",
          "[engine][guards]") {
  UrlGuards g;
  g.max_url_length = 60;
  g.max_path_segments = 6;
  g.max_repeats = 2;
  g.max_query_params = 3;
  CHECK(TrippedGuard("http://a.test/", g) == nullptr);
  CHECK(TrippedGuard("http://a.test/x/y/z.html?a=1&b=2&c=3#f", g) == nullptr);
  CHECK(std::string(TrippedGuard("http://a.test/" + std::string(60, 'x'), g)) ==
        "url_length");
  CHECK(std::string(TrippedGuard("http://a.test/1/2/3/4/5/6/7", g)) == "path_segments");
  CHECK(TrippedGuard("http://a.test/1/2/3/4/5/6/", g) == nullptr);
  CHECK(std::string(TrippedGuard("http://a.test/a/b/a/b/a/b/", g)) ==
        "repeated_segments");
  CHECK(TrippedGuard("http://a.test/a/b/a/b/a/", g) == nullptr);
  CHECK(std::string(TrippedGuard("http://a.test/x/x/x", g)) == "repeated_segments");
  CHECK(std::string(TrippedGuard("http://a.test/q?a=1&b=2&c=3&d=4", g)) ==
        "query_params");
  // A query's slashes and a fragment are not path segments.
  CHECK(TrippedGuard("http://a.test/p?u=/x/x/x/x/x/x#/y/y/y", g) == nullptr);
  // 0 turns a guard off.
  UrlGuards off{0, 0, 0, 0};
  CHECK(TrippedGuard("http://a.test/x/x/x/x/x/x/x/x/x/x/x/x?" + std::string(5000, 'a'),
                     off) == nullptr);
  CHECK(MostRepeats("/") == 0);
  CHECK(MostRepeats("/a/b/c") == 1);
  CHECK(MostRepeats("/a/b/a/b/") == 2);
  CHECK(MostRepeats("/p/q/r/p/q/r/p/q/r/s") == 3);
}

}  // namespace
}  // namespace crawler::engine
