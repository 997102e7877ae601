// WHATWG URL conformance: every http(s) case of web-platform-tests'
// url/resources/urltestdata.json (a copy in tests/parsers/data/, see its
// README) through ResolveHref, compared with what a browser makes of it.
//
// A case is http(s) when its expected href is an http(s) URL, or when it must
// fail and its input or base is http(s). What is compared: our dedup key for
// (base, input) against the key of the browser's href
// (NormalizeUrl(href): the same URL once our documented normalization is
// applied: fragment dropped, unreserved escapes decoded, default port
// dropped, ...). A failure case passes when we reject the href too.
//
// The cases we read otherwise are listed below, each with the reason; the
// test fails when a listed case starts to pass (take it off the list) or an
// unlisted one fails (a regression, or a new deviation to explain).
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "parsers/url.h"

namespace crawler::parsers {
namespace {

bool IsHttp(std::string_view s) {
  // WHATWG strips leading C0 controls and spaces, and schemes are
  // case-insensitive.
  size_t i = 0;
  while (i < s.size() && static_cast<unsigned char>(s[i]) <= 0x20) ++i;
  std::string head;
  for (; i < s.size() && head.size() < 6; ++i)
    head += static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
  return head.rfind("http:", 0) == 0 || head.rfind("https:", 0) == 0;
}

struct Case {
  std::string input, base, href;  // href empty: must fail
};

std::vector<Case> HttpCases() {
  std::ifstream in(std::string(CRAWLER_SOURCE_DIR) +
                   "/tests/parsers/data/urltestdata.json");
  std::stringstream text;
  text << in.rdbuf();
  boost::json::value all = boost::json::parse(text.str());
  std::vector<Case> out;
  for (const boost::json::value& v : all.as_array()) {
    if (!v.is_object()) continue;  // the file's comments
    const boost::json::object& o = v.as_object();
    Case c;
    c.input = std::string(o.at("input").as_string());  // NULs included
    if (o.at("base").is_string()) c.base = std::string(o.at("base").as_string());
    bool failure = o.contains("failure");
    if (!failure) c.href = std::string(o.at("href").as_string());
    if (failure ? (IsHttp(c.input) || IsHttp(c.base)) : IsHttp(c.href)) out.push_back(c);
  }
  return out;
}

// What the crawler makes of the case: the href on a page at `base` (an
// http(s) page's base is a normalized URL), or an absolute URL alone.
UrlResult OurKey(const Case& c) {
  if (!IsHttp(c.base)) return NormalizeUrl(c.input);
  UrlResult base = NormalizeUrl(c.base);
  if (!base.ok()) return base;
  return ResolveHref(*base, c.input);
}

// The cases we read otherwise, by input, and why: each is a choice about
// which URLs the crawler takes at all, not a parsing gap.
const std::map<std::string, std::string> kDeviations = {
    // Hosts no DNS name can have: refused when parsed (a clear error in the
    // log) rather than failing at DNS lookup; browsers keep them as opaque
    // names.
    {"http://!\"$&'()*+,-.;=_`{}~/", "host characters outside letters, digits, - and _"},
    {"http://./", "a host of empty labels"},
    {"http://../", "a host of empty labels"},
    {"http://foo.09..", "an empty label before the trailing dot"},
    // Port 0 cannot be connected to; refused when parsed.
    {"http://f:0/c", "port 0"},
    {"http://f:00000000000000/c", "port 0"},
    // IDNA by libidn2 (UTS #46 and then IDNA2008's registration rules, which
    // disallow symbols): a host written with one in Unicode is refused; its
    // punycode form, as most hrefs write it ("xn--n3h"), is taken.
    {"https://%e2%98%83", "a snowman host in Unicode (libidn2: IDNA2008 disallows it)"},
};

TEST_CASE("WHATWG urltestdata.json: every http(s) case, as a browser reads it",
          "[parsers][url][whatwg]") {
  std::vector<Case> cases = HttpCases();
  REQUIRE(cases.size() > 200);
  size_t passed = 0;
  std::map<std::string, std::string> failed;  // input -> what differed
  for (const Case& c : cases) {
    UrlResult ours = OurKey(c);
    if (c.href.empty()) {
      if (!ours.ok()) {
        ++passed;
      } else {
        failed[c.input] = "accepted as " + *ours + ", browsers reject it";
      }
      continue;
    }
    UrlResult want = NormalizeUrl(c.href);
    if (!want.ok()) {
      failed[c.input] = "the browser's href " + c.href +
                        " does not normalize: " + want.status().message();
    } else if (!ours.ok()) {
      failed[c.input] = "rejected (" + ours.status().message() + "), browsers: " + c.href;
    } else if (*ours != *want) {
      failed[c.input] = "ours " + *ours + ", browsers " + *want;
    } else {
      ++passed;
    }
  }
  WARN("WHATWG urltestdata.json: " << passed << " of " << cases.size()
                                   << " http(s) cases read as browsers do; "
                                   << kDeviations.size() << " deliberate deviations");
  // Every case that differs is a listed deviation, and every listed one
  // still differs (a fixed one leaves the list).
  std::set<std::string> listed;
  for (const auto& [input, why] : kDeviations) listed.insert(input);
  for (const auto& [input, why] : failed) {
    INFO("input '" << input << "': " << why);
    CHECK(listed.count(input) == 1);
  }
  for (const std::string& input : listed) {
    INFO("listed deviation '" << input << "' (" << kDeviations.at(input) << ")");
    CHECK(failed.count(input) == 1);
  }
  CHECK(passed + kDeviations.size() == cases.size());
}

}  // namespace
}  // namespace crawler::parsers
