// The testsite's changing web (site.h, "Validators and change"): the change
// model itself, and the server's validators and 304s, read back with a
// plain HTTP client (Boost.Beast), not the crawler.
#include "site.h"

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <string>

#include "crawl_output.h"
#include "testsite_process.h"

namespace crawler::testsite {
namespace {

namespace http = boost::beast::http;
using testing::TempDir;
using testing::TestSite;

double NowUnix() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// GET `path` from 127.0.0.1:port with `headers` (name, value).
http::response<http::string_body> Get(
    unsigned port, const std::string& path,
    const std::vector<std::pair<http::field, std::string>>& headers = {}) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  socket.connect(
      {boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
  http::request<http::empty_body> req{http::verb::get, path, 11};
  req.set(http::field::host, "127.0.0.1:" + std::to_string(port));
  for (const auto& [name, value] : headers) req.set(name, value);
  http::write(socket, req);
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(socket, buffer, res);
  return res;
}

TEST_CASE(
    "Testsite change model: each page's changes are a Poisson process of its own rate; "
    "versions count them; the truth set is the static site's",
    "[testsite]") {
  SiteOptions o;
  o.pages = 200;
  o.hosts = 2;
  o.port = 9000;
  o.change_mean_s = 10;
  Site site(o);
  double lowest = 1e9, highest = 0, expected = 0;
  uint64_t changes = 0;
  const double horizon = 2000;
  for (uint32_t i = 0; i < 100; ++i) {
    const double rate = site.ChangeRate(1, i);
    lowest = std::min(lowest, rate);
    highest = std::max(highest, rate);
    expected += rate * horizon;
    const uint64_t v = site.Version(1, i, horizon);
    changes += v;
    // Version counts the changes: it steps at each ChangeTime, not before.
    for (uint64_t k = 1; k <= std::min<uint64_t>(v, 5); ++k) {
      const double at = site.ChangeTime(1, i, k);
      CHECK(site.Version(1, i, at) == k);
      CHECK(site.Version(1, i, std::nextafter(at, 0.0)) == k - 1);
    }
    CHECK(site.Version(1, i, 0) == 0);
  }
  // Mean intervals of 10 s x [1/8, 8]: rates 1/80 to 0.8 per second.
  CHECK(lowest >= 1.0 / 80 * 0.999);
  CHECK(highest <= 0.8 * 1.001);
  CHECK(highest / lowest > 8);
  // Poisson: the total is within 5 standard deviations of its mean.
  INFO("changes " << changes << ", expected " << expected);
  CHECK(std::fabs(static_cast<double>(changes) - expected) < 5 * std::sqrt(expected));
  // Pages change, links do not.
  o.change_mean_s = 0;
  Site still(o);
  CHECK(still.ChangeRate(1, 3) == 0);
  CHECK(still.Version(1, 3, 1e6) == 0);
  CHECK(still.Truth() == site.Truth());
  CHECK(site.Serve(1, "/p/3.html", 0).body != site.Serve(1, "/p/3.html", horizon).body);
  CHECK(site.NormalizedLinks(1, "/p/3.html") == still.NormalizedLinks(1, "/p/3.html"));
  // The "cho" model: 20% at 8 / M, half never, the rest within [1/8, 8] / M.
  o.change_mean_s = 10;
  o.change_model = "cho";
  Site cho(o);
  uint32_t fastest = 0, never = 0, between = 0;
  for (uint32_t i = 0; i < 100; ++i) {
    for (uint32_t h = 0; h < 2; ++h) {
      const double rate = cho.ChangeRate(h, i);
      if (rate == 0) {
        ++never;
        CHECK(cho.Version(h, i, 1e6) == 0);
      } else if (rate == Approx(0.8)) {
        ++fastest;
      } else {
        ++between;
        CHECK(rate >= 1.0 / 80 * 0.999);
        CHECK(rate <= 0.8 * 1.001);
      }
    }
  }
  INFO(fastest << " fastest, " << never << " never, " << between << " between");
  CHECK(fastest > 20);  // 40 expected of 200 (sd 5.7)
  CHECK(fastest < 60);
  CHECK(never > 75);  // 100 expected (sd 7.1)
  CHECK(never < 125);
  CHECK(between > 40);  // 60 expected (sd 6.5)
  CHECK(cho.Truth() == site.Truth());
}

TEST_CASE(
    "Testsite validators: ETag and Last-Modified on every 200; If-None-Match and "
    "If-Modified-Since answered 304 with no body; a changed page is a 200 again",
    "[testsite]") {
  const std::string dir = TempDir("testsite-change");
  // Time 0 a while ago: page versions are well past 0.
  const double epoch = std::floor(NowUnix()) - 1000;
  TestSite served("--pages 40 --hosts 1 --change-mean-s 2 --epoch " +
                      std::to_string(static_cast<long>(epoch)),
                  dir + "/requests.log");
  SiteOptions o;
  o.pages = 40;
  o.hosts = 1;
  o.port = static_cast<uint16_t>(served.port());
  o.change_mean_s = 2;
  Site site(o);

  // A page: its version is the model's at the time it was served.
  const double before = NowUnix() - epoch;
  auto page = Get(served.port(), "/p/7.html");
  const double after = NowUnix() - epoch;
  REQUIRE(page.result_int() == 200);
  const std::string etag(page[http::field::etag]);
  const uint64_t v0 = site.Version(0, 7, before), v1 = site.Version(0, 7, after);
  CHECK(v0 > 10);
  CHECK((etag == "\"0-7-" + std::to_string(v0) + "\"" ||
         etag == "\"0-7-" + std::to_string(v1) + "\""));
  CHECK(page.body().find("<p class=\"version\">" + etag + "</p>") != std::string::npos);
  CHECK(!page[http::field::last_modified].empty());

  // The same ETag: 304 while the page has not changed since, 200 after.
  auto again = Get(served.port(), "/p/7.html", {{http::field::if_none_match, etag}});
  const double then = NowUnix() - epoch;
  const std::string current = "\"0-7-" + std::to_string(site.Version(0, 7, then)) + "\"";
  if (current == etag) {
    CHECK(again.result_int() == 304);
    CHECK(again.body().empty());
    CHECK(std::string(again[http::field::etag]) == etag);
  }
  // An ETag the page had long ago: the page is sent again, with the new one.
  auto old = Get(served.port(), "/p/7.html", {{http::field::if_none_match, "\"0-7-1\""}});
  CHECK(old.result_int() == 200);
  CHECK(std::string(old[http::field::etag]) != "\"0-7-1\"");

  // A file that never changes: Last-Modified is time 0, and If-Modified-Since
  // at or after it is a 304; before it, a 200.
  auto file = Get(served.port(), "/files/3.txt");
  REQUIRE(file.result_int() == 200);
  const std::string modified(file[http::field::last_modified]);
  auto same =
      Get(served.port(), "/files/3.txt", {{http::field::if_modified_since, modified}});
  CHECK(same.result_int() == 304);
  CHECK(same.body().empty());
  auto earlier = Get(served.port(), "/files/3.txt",
                     {{http::field::if_modified_since, "Mon, 01 Jan 2001 00:00:00 GMT"}});
  CHECK(earlier.result_int() == 200);
  // If-None-Match wins over If-Modified-Since (RFC 9110 13.2.2).
  auto both = Get(served.port(), "/files/3.txt",
                  {{http::field::if_none_match, "\"other\""},
                   {http::field::if_modified_since, modified}});
  CHECK(both.result_int() == 200);
  // The server logs a 304 as such.
  served.Stop();
  CHECK(testing::ReadText(dir + "/requests.log").find(" 304 /files/3.txt") !=
        std::string::npos);
}

}  // namespace
}  // namespace crawler::testsite
