// URL resolution and normalization (parsers/url.h): RFC 3986 section 5.4
// examples, each normalization rule with positive and negative cases, the
// browser (WHATWG) deviations, errors, punycode (RFC 3492) and idempotence.
#include "parsers/url.h"

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "url_result.h"

namespace crawler::parsers {
namespace {

using testing::UrlOf;

using Cases = std::vector<std::pair<std::string, std::string>>;
constexpr const char* kBase = "http://a/b/c/d;p?q";

void CheckResolves(const Cases& cases) {
  for (const auto& [ref, want] : cases) {
    INFO("reference \"" << ref << "\"");
    UrlResult r = ResolveReference(kBase, ref);
    REQUIRE(r.ok());
    CHECK(UrlOf(r) == want);
  }
}

TEST_CASE("RFC 3986 5.4.1: normal examples", "[parsers][url][rfc3986]") {
  CheckResolves({{"g:h", "g:h"},
                 {"g", "http://a/b/c/g"},
                 {"./g", "http://a/b/c/g"},
                 {"g/", "http://a/b/c/g/"},
                 {"/g", "http://a/g"},
                 {"//g", "http://g"},
                 {"?y", "http://a/b/c/d;p?y"},
                 {"g?y", "http://a/b/c/g?y"},
                 {"#s", "http://a/b/c/d;p?q#s"},
                 {"g#s", "http://a/b/c/g#s"},
                 {"g?y#s", "http://a/b/c/g?y#s"},
                 {";x", "http://a/b/c/;x"},
                 {"g;x", "http://a/b/c/g;x"},
                 {"g;x?y#s", "http://a/b/c/g;x?y#s"},
                 {"", "http://a/b/c/d;p?q"},
                 {".", "http://a/b/c/"},
                 {"./", "http://a/b/c/"},
                 {"..", "http://a/b/"},
                 {"../", "http://a/b/"},
                 {"../g", "http://a/b/g"},
                 {"../..", "http://a/"},
                 {"../../", "http://a/"},
                 {"../../g", "http://a/g"}});
}

TEST_CASE("RFC 3986 5.4.2: abnormal examples", "[parsers][url][rfc3986]") {
  CheckResolves({{"../../../g", "http://a/g"},
                 {"../../../../g", "http://a/g"},
                 {"/./g", "http://a/g"},
                 {"/../g", "http://a/g"},
                 {"g.", "http://a/b/c/g."},
                 {".g", "http://a/b/c/.g"},
                 {"g..", "http://a/b/c/g.."},
                 {"..g", "http://a/b/c/..g"},
                 {"./../g", "http://a/b/g"},
                 {"./g/.", "http://a/b/c/g/"},
                 {"g/./h", "http://a/b/c/g/h"},
                 {"g/../h", "http://a/b/c/h"},
                 {"g;x=1/./y", "http://a/b/c/g;x=1/y"},
                 {"g;x=1/../y", "http://a/b/c/y"},
                 {"g?y/./x", "http://a/b/c/g?y/./x"},
                 {"g?y/../x", "http://a/b/c/g?y/../x"},
                 {"g#s/./x", "http://a/b/c/g#s/./x"},
                 {"g#s/../x", "http://a/b/c/g#s/../x"},
                 {"http:g", "http:g"}});  // strict parser
}

void CheckNormalizes(const Cases& cases, const UrlOptions& options = {}) {
  for (const auto& [in, want] : cases) {
    INFO("input \"" << in << "\"");
    UrlResult r = NormalizeUrl(in, options);
    INFO("error: " << r.status().message());
    REQUIRE(r.ok());
    CHECK(UrlOf(r) == want);
  }
}

void CheckRejects(const Cases& cases) {
  for (const auto& [in, words] : cases) {
    INFO("input \"" << in << "\"");
    UrlResult r = NormalizeUrl(in);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains(words));
  }
}

TEST_CASE("Normalize: scheme and host are lowercased, the path is not",
          "[parsers][url]") {
  CheckNormalizes(
      {{"HTTP://Example.COM/Path/FILE.html", "http://example.com/Path/FILE.html"},
       {"hTTps://WWW.a.ORG", "https://www.a.org/"}});
}

TEST_CASE("Normalize: default ports dropped, other ports kept", "[parsers][url]") {
  CheckNormalizes({{"http://a:80/x", "http://a/x"},
                   {"https://a:443/x", "https://a/x"},
                   {"http://a:/x", "http://a/x"},
                   {"http://a:8080/x", "http://a:8080/x"},
                   {"https://a:80/x", "https://a:80/x"},
                   {"http://a:0080/x", "http://a/x"}});
}

TEST_CASE("Normalize: empty path becomes /", "[parsers][url]") {
  CheckNormalizes({{"http://a", "http://a/"},
                   {"http://a?x=1", "http://a/?x=1"},
                   {"http://a/b", "http://a/b"}});
}

TEST_CASE("Normalize: dot segments removed (RFC 3986 5.2.4)", "[parsers][url]") {
  CheckNormalizes({{"http://a/b/./c/../d", "http://a/b/d"},
                   {"http://a/../../x", "http://a/x"},
                   {"http://a/b/%2E%2E/c", "http://a/c"},
                   {"http://a/b..c/.d", "http://a/b..c/.d"}});
}

TEST_CASE("Normalize: unreserved escapes decoded, others uppercased, %2F %3F %23 kept",
          "[parsers][url]") {
  CheckNormalizes({{"http://a/%7Euser/%41%62", "http://a/~user/Ab"},
                   {"http://a/x%2fy%3fz%23w", "http://a/x%2Fy%3Fz%23w"},
                   {"http://a/%e2%82%ac?q=%c3%a9", "http://a/%E2%82%AC?q=%C3%A9"},
                   {"http://a/%2D%2E%5F", "http://a/-._"}});
}

TEST_CASE("Normalize: fragment dropped, lone trailing ? dropped", "[parsers][url]") {
  CheckNormalizes({{"http://a/b#frag", "http://a/b"},
                   {"http://a/b?#", "http://a/b"},
                   {"http://a/b?", "http://a/b"},
                   {"http://a/b?x", "http://a/b?x"},
                   {"http://a/b?x=", "http://a/b?x="}});
}

TEST_CASE("Normalize: IDN hosts become punycode", "[parsers][url][idn]") {
  CheckNormalizes({{"http://bücher.example/", "http://xn--bcher-kva.example/"},
                   {"http://b%C3%BCcher.example/", "http://xn--bcher-kva.example/"},
                   {"http://xn--bcher-kva.example/", "http://xn--bcher-kva.example/"},
                   {"http://münchen.DE/", "http://xn--mnchen-3ya.de/"}});
}

TEST_CASE("RFC 3492 7.1 samples and UTS #46 mapping (libidn2) in hosts",
          "[parsers][url][idn]") {
  CheckNormalizes({
      // (B) Chinese (simplified); (L) 3<nen>B<gumi><kinpachi><sensei>, whose "B"
      // UTS #46 maps to "b" before punycode.
      {"http://\u4ED6\u4EEC\u4E3A\u4EC0\u4E48\u4E0D\u8BF4\u4E2D\u6587.example/",
       "http://xn--ihqwcrb4cv8a8dqg056pqjye.example/"},
      {"http://3\u5E74B\u7D44\u91D1\u516B\u5148\u751F.example/",
       "http://xn--3b-ww4c5e180e575a65lsy2b.example/"},
      // Case folding of non-ASCII letters (was a gap: "BÜCHER" gave another key).
      {"http://B\u00DCCHER.example/", "http://xn--bcher-kva.example/"},
      // Fullwidth letters map to ASCII.
      {"http://\uFF45\uFF58\uFF41\uFF4D\uFF50\uFF4C\uFF45.com/", "http://example.com/"},
      // Non-transitional: "ß" stays (as in browsers), not "ss".
      {"http://fa\u00DF.de/", "http://xn--fa-hia.de/"},
  });
  CHECK_FALSE(NormalizeUrl("http://\xff\xfe.example/").ok());  // not UTF-8
  CHECK_FALSE(NormalizeUrl("http://a\u2028b.example/").ok());  // disallowed code point
  // A host that maps to nothing (U+00AD, soft hyphen) is no host (url_fuzz).
  CHECK_FALSE(NormalizeUrl("http://\u00AD/").ok());
}

TEST_CASE("Normalize: only http and https", "[parsers][url]") {
  CheckRejects({{"ftp://a/x", "scheme 'ftp' is not http or https"},
                {"mailto:someone@example.org", "scheme 'mailto'"},
                {"javascript:alert(1)", "scheme 'javascript'"}});
  CheckNormalizes({{"https://a/", "https://a/"}});
}

TEST_CASE("Normalize: errors say what is wrong", "[parsers][url]") {
  CheckRejects({{"", "empty URL"},
                {"example.com/x", "no scheme"},
                {"/relative/path", "no scheme"},
                {"http://a:99999/", "bad port '99999'"},
                {"http://a:8x/", "bad port '8x'"},
                {"http:///", "no host"},
                {"https:", "no host"},
                {"http://" + std::string(300, 'a') + ".com/", "longer than 63"},
                {"http://" + std::string(5, 'x') + std::string(260, '.'), "empty label"},
                {"http://a b.com/", "bad character ' '"}});
  std::string long_host;
  for (int i = 0; i < 30; ++i) long_host += "abcdefghi.";
  CheckRejects({{"http://" + long_host + "com/", "host longer than 253"}});
  UrlOptions short_urls;
  short_urls.max_length = 20;
  UrlResult r = NormalizeUrl("http://a/" + std::string(30, 'x'), short_urls);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::Contains("longer than 20 bytes"));
}

TEST_CASE("Lossy rules are off by default and each works when named", "[parsers][url]") {
  const std::string in =
      "http://www.a.com/p;jsessionid=0123?b=2&utm_source=x&a=1&PHPSESSID=zz&fbclid=q"
      "&sid=0123456789abcdef0123456789abcdef&sid=short";
  CheckNormalizes({{in, in.substr(0, in.size())}});  // default: unchanged
  UrlOptions sort;
  sort.sort_query = true;
  CheckNormalizes({{"http://a/?b=2&a=1&a=0", "http://a/?a=0&a=1&b=2"}}, sort);
  UrlOptions tracking;
  tracking.strip_tracking = true;
  CheckNormalizes({{"http://a/?utm_source=x&k=v&UTM_medium=y&gclid=1", "http://a/?k=v"},
                   {"http://a/?utm_source=x", "http://a/"}},
                  tracking);
  UrlOptions session;
  session.strip_session_ids = true;
  CheckNormalizes({{"http://a/p;jsessionid=0123?x=1&PHPSESSID=zz", "http://a/p?x=1"},
                   {"http://a/?sid=0123456789abcdef0123456789abcdef&sid=short",
                    "http://a/?sid=short"}},
                  session);
  UrlOptions www;
  www.strip_www = true;
  CheckNormalizes(
      {{"http://www.a.com/", "http://a.com/"}, {"http://wwwa.com/", "http://wwwa.com/"}},
      www);
}

// Each href resolves against `base` to the URL wanted.
void CheckHrefs(const std::string& base, const Cases& cases) {
  for (const auto& [href, want] : cases) {
    INFO("href \"" << href << "\"");
    UrlResult r = ResolveHref(base, href);
    INFO("error: " << r.status().message());
    REQUIRE(r.ok());
    CHECK(UrlOf(r) == want);
  }
}

TEST_CASE("WHATWG: hrefs are cleaned and resolved as a browser does",
          "[parsers][url][whatwg]") {
  const std::string base = "http://a/b/c/d;p?q";
  Cases cases = {{"  /g  ", "http://a/g"},                 // leading/trailing spaces
                 {"\t/g\n/h\r", "http://a/g/h"},           // tabs and newlines removed
                 {"\\g\\h", "http://a/g/h"},               // backslash is a slash
                 {"g\\h?x\\y", "http://a/b/c/g/h?x%5Cy"},  // ... but not in the query
                 {"http:g", "http://a/b/c/g"},  // same special scheme: relative
                 {"http:/g", "http://a/g"},
                 {"/a b", "http://a/a%20b"},        // spaces percent-encoded
                 {"/\xc3\xbc", "http://a/%C3%BC"},  // non-ASCII bytes as UTF-8
                 {"/x\"<>`{}|^", "http://a/x%22%3C%3E%60%7B%7D%7C%5E"},
                 {"#frag", "http://a/b/c/d;p?q"},
                 {"//OTHER.example:80/x", "http://other.example/x"},
                 {"https://b/", "https://b/"}};
  CheckHrefs(base, cases);
  CHECK_FALSE(ResolveHref(base, "mailto:x@y").ok());
  CHECK_FALSE(ResolveHref(base, "javascript:void(0)").ok());
}

// Hrefs RFC 3986 rejects or reads otherwise, as browsers (WHATWG) read them;
// a page behind each was lost before.
TEST_CASE("WHATWG: stray %, ':' in a first segment, repaired slashes, empty userinfo",
          "[parsers][url][whatwg]") {
  const std::string base = "http://a/b/c/d;p?q";
  Cases cases = {// A "%" that starts no escape is a "%" (sent as %25, as wget does).
                 {"100%.html", "http://a/b/c/100%25.html"},
                 {"/a%zz?q=5%", "http://a/a%25zz?q=5%25"},
                 {"/%4", "http://a/%254"},
                 {"/%41%", "http://a/A%25"},
                 // A ':' in the first segment of a relative href is part of a path.
                 {"10:30-meeting.html", "http://a/b/c/10:30-meeting.html"},
                 {"2024:report", "http://a/b/c/2024:report"},
                 {"_a:b", "http://a/b/c/_a:b"},
                 {"http:10:30", "http://a/b/c/10:30"},
                 // Another special scheme, or three slashes: the authority is repaired.
                 {"https:/example.com/x", "https://example.com/x"},
                 {"https:example.com/x", "https://example.com/x"},
                 {"https:///example.com/x", "https://example.com/x"},
                 {"///example.org/path", "http://example.org/path"},
                 {R"(\\\example.org\p)", "http://example.org/p"},
                 {"http:///example.org/", "http://example.org/"},
                 // An empty userinfo is no userinfo; an empty password drops its ':'.
                 {"http://@example.org/", "http://example.org/"},
                 {"http://:@example.org/", "http://example.org/"},
                 {"http://u:@example.org/", "http://u@example.org/"},
                 {"http://:p@example.org/", "http://:p@example.org/"}};
  CheckHrefs(base, cases);
  // IPv4 in other forms (WHATWG's IPv4 parser): one key per address.
  for (const auto& [url, want] : Cases{{"http://0x7f.1/", "http://127.0.0.1/"},
                                       {"http://0300.0250.1.1/", "http://192.168.1.1/"},
                                       {"http://3232235777/", "http://192.168.1.1/"},
                                       {"http://127.1/x", "http://127.0.0.1/x"},
                                       {"http://0x7F.0.0.1./", "http://127.0.0.1/"},
                                       {"http://1.0x/", "http://1.0.0.0/"},
                                       {"http://example.com/", "http://example.com/"},
                                       {"http://a1.b2/", "http://a1.b2/"}}) {
    INFO("url \"" << url << "\"");
    CHECK(UrlOf(NormalizeUrl(url)) == want);
    CHECK(UrlOf(ResolveHref(base, url)) == want);
  }
  CHECK_FALSE(NormalizeUrl("http://1.2.3.4.5/").ok());  // (Boost.URL's own refusal)
  for (const char* bad : {"http://example.300/", "http://256.0.0.1/", "http://08.1/",
                          "http://0x100000000/", "http://1.2.65536/"}) {
    INFO("url \"" << bad << "\"");
    UrlResult r = NormalizeUrl(bad);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains("bad IPv4 host"));
  }
  // The same repairs for absolute URLs (seeds, redirects), and idempotent.
  for (const auto& [url, want] : Cases{{"http://a/%zz", "http://a/%25zz"},
                                       {"http:///x", "http://x/"},
                                       {"https:example.com", "https://example.com/"},
                                       {"http://@example.org/", "http://example.org/"}}) {
    INFO("url \"" << url << "\"");
    CHECK(UrlOf(NormalizeUrl(url)) == want);
    CHECK(UrlOf(NormalizeUrl(want)) == want);
  }
}

TEST_CASE("Normalization is idempotent", "[parsers][url]") {
  UrlOptions all;
  all.sort_query = all.strip_tracking = all.strip_session_ids = all.strip_www = true;
  const std::vector<std::string> inputs = {
      "HTTP://Example.COM:80/a/./b/../c/%7e%2f?b=2&a=1#x",
      "https://bücher.example/ü?q=%c3%a9&utm_x=1",
      "http://a/%2e%2E/x;jsessionid=1/y?",
      "http://[::1]:8080/x",
      "http://127.0.0.1/a b",
      "http://www.www.a/"};
  for (const UrlOptions& o : {UrlOptions{}, all}) {
    for (const std::string& in : inputs) {
      INFO("input \"" << in << "\"");
      UrlResult once = NormalizeUrl(in, o);
      INFO("error: " << once.status().message());
      REQUIRE(once.ok());
      UrlResult twice = NormalizeUrl(UrlOf(once), o);
      REQUIRE(twice.ok());
      CHECK(UrlOf(twice) == UrlOf(once));
    }
  }
}

}  // namespace
}  // namespace crawler::parsers
