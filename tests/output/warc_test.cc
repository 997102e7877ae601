// WARC output (crawler/warc.h): SHA-1/base32 against published vectors, the
// records read back by our own gzip reader and by an independent reader
// (the warcio CLI from npm, installed by scripts/install-deps.sh), rotation.
#include "crawler/warc.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "base/sha1.h"
#include "crawl_output.h"
#include "output/cdxj.h"
#include "run_command.h"

namespace crawler::output {
namespace {

std::string Hex(const std::array<uint8_t, 20>& d) {
  std::string out;
  char buf[3];
  for (uint8_t b : d) {
    std::snprintf(buf, sizeof(buf), "%02x", b);
    out += buf;
  }
  return out;
}

std::string Sha1Hex(const std::string& s) {
  Sha1 sha;
  sha.Update(s);
  return Hex(sha.Final());
}

TEST_CASE("SHA-1: FIPS 180 test vectors; base32 per RFC 4648", "[engine][warc][sha1]") {
  CHECK(Sha1Hex("") == "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  CHECK(Sha1Hex("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d");
  CHECK(Sha1Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  Sha1 chunked;  // a million 'a' in uneven pieces
  for (int i = 0; i < 1000; ++i) chunked.Update(std::string(i % 2 ? 999 : 1001, 'a'));
  CHECK(Hex(chunked.Final()) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
  const uint8_t foobar[] = {'f', 'o', 'o', 'b', 'a', 'r'};
  CHECK(Base32(foobar, 6) == "MZXW6YTBOI======");
  CHECK(WarcDigest("") == "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
}

TEST_CASE("SHA-1: lengths around the block and padding boundaries",
          "[engine][warc][sha1]") {
  // Digests of "0123456789" repeated to each length, from Python's hashlib.
  const std::pair<size_t, const char*> cases[] = {
      {55, "9f3a4ce7f66b1b74c34da2c5d732c39f81e0f8df"},
      {56, "0a40b8fbdaafb7c29651618ac15d27e772287130"},
      {63, "984b0f2f6d78c24020f5a79d409f67ab99302891"},
      {64, "cf0800f7644ace3cb4c3fa33388d3ba0ea3c8b6e"},
      {65, "92de3a8444fe6d15268f0ba810aa43bc8b3a4ffe"},
      {119, "d1ba16c5f745875597b6d0b9061f30b5a5c89092"},
      {120, "deb4cf0a6f315d8403e5eff0923a8c5c52f21ac8"},
      {128, "b5d36071c0845df9e0727b58ec97d2796f3312d0"},
      {1000, "f2b2f38b074c387a1415c3afb834c7232f31b097"},
      {10007, "046d7442e8585ae7fa50ebece1fc0f5a71c8e0ce"}};
  std::string digits;
  while (digits.size() < 10007) digits += "0123456789";
  for (const auto& [n, hex] : cases) {
    INFO("length " << n);
    CHECK(Sha1Hex(digits.substr(0, n)) == hex);
  }
}

// All gzip members of a file, concatenated.
std::string Gunzip(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  std::string out;
  size_t pos = 0;
  int members = 0;
  while (pos < data.size()) {
    z_stream z{};
    REQUIRE(inflateInit2(&z, 15 + 16) == Z_OK);
    z.next_in = reinterpret_cast<Bytef*>(data.data() + pos);
    z.avail_in = static_cast<uInt>(data.size() - pos);
    char buf[65536];
    int rc;
    do {
      z.next_out = reinterpret_cast<Bytef*>(buf);
      z.avail_out = sizeof(buf);
      rc = inflate(&z, Z_NO_FLUSH);
      REQUIRE((rc == Z_OK || rc == Z_STREAM_END));
      out.append(buf, sizeof(buf) - z.avail_out);
    } while (rc != Z_STREAM_END);
    pos += z.total_in;
    inflateEnd(&z);
    ++members;
  }
  return out;
}

struct Record {
  std::string type, uri, payload_digest, block;
};

std::vector<Record> Parse(const std::string& warc) {
  std::vector<Record> out;
  size_t pos = 0;
  while (pos < warc.size()) {
    REQUIRE(warc.compare(pos, 10, "WARC/1.1\r\n") == 0);
    size_t end = warc.find("\r\n\r\n", pos);
    std::string head = warc.substr(pos, end - pos);
    auto field = [&head](const std::string& name) {
      size_t at = head.find("\r\n" + name + ": ");
      if (at == std::string::npos) return std::string();
      at += name.size() + 4;
      return head.substr(at, head.find("\r\n", at) - at);
    };
    Record r{field("WARC-Type"), field("WARC-Target-URI"), field("WARC-Payload-Digest"),
             ""};
    size_t length = std::stoull(field("Content-Length"));
    r.block = warc.substr(end + 4, length);
    REQUIRE(warc.compare(end + 4 + length, 4, "\r\n\r\n") == 0);
    pos = end + 4 + length + 4;
    out.push_back(r);
  }
  return out;
}

// An exchange with its own buffers (Exchange only views them).
struct OwnedExchange {
  std::string url, ip, request, response_head, body;
  std::chrono::system_clock::time_point date;
  Exchange View() const {
    return Exchange{url,  ip, date,         request, response_head,
                    body, {}, std::nullopt, {},      {}};
  }
};

OwnedExchange MakeExchange(int i) {
  OwnedExchange ex;
  ex.url = "http://127.0.0.1:8080/page-" + std::to_string(i) + ".html";
  ex.ip = "127.0.0.1";
  ex.date = std::chrono::system_clock::now();
  ex.request =
      "GET /page-" + std::to_string(i) + ".html HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";
  ex.body = "<html><body>page " + std::to_string(i) +
            std::string(static_cast<size_t>(i * 37 % 5000), 'x') + "</body></html>";
  ex.response_head = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: " +
                     std::to_string(ex.body.size()) + "\r\n\r\n";
  return ex;
}

class TempDir {
 public:
  TempDir()
      : path_((std::filesystem::temp_directory_path() /
               ("warc-test-" + std::to_string(::getpid())))
                  .string()) {
    std::filesystem::remove_all(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST_CASE("WARC: warcinfo, then response + request per fetch, digests that verify",
          "[engine][warc]") {
  TempDir dir;
  WarcOptions o;
  o.dir = dir.path();
  auto w = WarcWriter::Open(o);
  REQUIRE(w.ok());
  for (int i = 0; i < 20; ++i) REQUIRE((*w)->Write(MakeExchange(i).View()).ok());
  REQUIRE((*w)->Sync().ok());
  std::string path = (*w)->CurrentPath();
  CHECK(path == dir.path() + "/crawl-00000.warc.gz");
  CHECK((*w)->Position().bytes == std::filesystem::file_size(path));

  std::vector<Record> records = Parse(Gunzip(path));
  REQUIRE(records.size() == 1 + 2 * 20);
  CHECK(records[0].type == "warcinfo");
  for (int i = 0; i < 20; ++i) {
    const Record& resp = records[1 + 2 * i];
    const Record& req = records[2 + 2 * i];
    OwnedExchange ex = MakeExchange(i);
    CHECK(resp.type == "response");
    CHECK(req.type == "request");
    CHECK(resp.uri == ex.url);
    CHECK(req.uri == ex.url);
    CHECK(resp.block == ex.response_head + ex.body);
    CHECK(resp.payload_digest == WarcDigest(ex.body));
    CHECK(req.block == ex.request);
  }

  SECTION("an independent reader (warcio, npm) sees every fetched URL") {
    testing::CommandResult index = testing::RunCommand("warcio index '" + path + "'");
    const std::string& out = index.output;
    INFO(out);
    REQUIRE(index.exit_code == 0);  // warcio missing? run scripts/install-deps.sh
    for (int i = 0; i < 20; ++i) {
      CHECK_THAT(out,
                 Catch::Contains("\"warc-target-uri\":\"" + MakeExchange(i).url + "\""));
    }
    CHECK_THAT(out, Catch::Contains("\"warc-type\":\"warcinfo\""));
  }
}

TEST_CASE("WARC: files rotate at rotate_bytes and a reopened writer never overwrites",
          "[engine][warc]") {
  TempDir dir;
  WarcOptions o;
  o.dir = dir.path();
  o.rotate_bytes = 4096;
  {
    auto w = WarcWriter::Open(o);
    REQUIRE(w.ok());
    for (int i = 0; i < 60; ++i) REQUIRE((*w)->Write(MakeExchange(i).View()).ok());
    CHECK((*w)->Position().file_index >= 2);
  }
  auto again = WarcWriter::Open(o);  // e.g. after a resume
  REQUIRE(again.ok());
  uint32_t first_new = (*again)->Position().file_index;
  CHECK(first_new >= 3);
  REQUIRE((*again)->Write(MakeExchange(99).View()).ok());
  REQUIRE((*again)->Sync().ok());
  int responses = 0;
  for (uint32_t f = 0; f <= first_new; ++f) {
    char name[64];
    std::snprintf(name, sizeof(name), "/crawl-%05u.warc.gz", f);
    std::vector<Record> records = Parse(Gunzip(dir.path() + name));
    REQUIRE_FALSE(records.empty());
    CHECK(records[0].type == "warcinfo");  // every file starts with one
    for (const Record& r : records) responses += r.type == "response";
  }
  CHECK(responses == 61);
}

TEST_CASE("WARC: a directory that cannot be created is an error naming it",
          "[engine][warc]") {
  WarcOptions o;
  o.dir = "/proc/no-such/warc";
  auto w = WarcWriter::Open(o);
  REQUIRE_FALSE(w.ok());
  CHECK_THAT(w.status().message(), Catch::Contains("/proc/no-such/warc"));
}

TEST_CASE(
    "WARC: the stored head of a decoded body: Content-Encoding, Content-Length and "
    "Transfer-Encoding renamed (any case), the body's length added",
    "[engine][warc]") {
  const std::string plain =
      "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nServer: x\r\n\r\n";
  CHECK(HeadForStoredBody(plain, 10) == plain);  // none of the three: as it is
  CHECK(HeadForStoredBody(
            "HTTP/1.1 200 OK\r\nCONTENT-ENCODING: gzip\r\ncontent-length: 31\r\n"
            "Content-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n",
            1234) ==
        "HTTP/1.1 200 OK\r\nX-Crawler-Original-CONTENT-ENCODING: gzip\r\n"
        "X-Crawler-Original-content-length: 31\r\nContent-Type: text/html\r\n"
        "X-Crawler-Original-Transfer-Encoding: chunked\r\nContent-Length: 1234\r\n\r\n");
  // A name that only starts like one of them is kept; a head cut short still
  // ends in one blank line.
  CHECK(HeadForStoredBody("HTTP/1.1 200 OK\r\nContent-Lengthy: 1\r\nContent-Length: 5",
                          7) ==
        "HTTP/1.1 200 OK\r\nContent-Lengthy: 1\r\nX-Crawler-Original-Content-Length: "
        "5\r\nContent-Length: 7\r\n\r\n");
}

TEST_CASE("WARC: a 304's revisit head gains its capture's Content-Type, marked",
          "[engine][warc]") {
  const std::string head =
      "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nDate: Sun, 06 Dec 2026\r\n\r\n";
  CHECK(HeadForNotModified(head, "image/svg+xml") ==
        "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nDate: Sun, 06 Dec 2026\r\n"
        "Content-Type: image/svg+xml\r\nX-Crawler-From-Capture: Content-Type\r\n\r\n");
  CHECK(HeadForNotModified(head, "") == head);  // the capture had none
}

TEST_CASE("CDXJ: SURT keys as warcio's getSurt (npm warcio 2.4) makes them",
          "[engine][warc][cdxj]") {
  // Each expected key printed by warcio's getSurt for the URL on the left.
  const std::pair<const char*, const char*> cases[] = {
      {"http://www.Example.com/a?b=2&a=1#frag", "com,example)/a?a=1&b=2"},
      {"https://www2.example.com:443/x", "com,example)/x"},
      {"http://example.com:8080/", "com,example:8080)/"},
      {"http://127.0.0.1:18700/p/1.html?z&y=1", "1,0,0,127:18700)/p/1.html?y=1&z"},
      {"https://www.example.com", "com,example)/"},
      {"ftp://x.org/a", "ftp://x.org/a"},
      {"http://[::1]:81/a%2Fb", "[::1]:81)/a%2fb"},
      {"http://wwwx.com/", "com,wwwx)/"},
      {"http://www.co/?", "co)/"},
      {"http://EXAMPLE.com/A?B=C&a=%41", "com,example)/a?a=%41&b=c"},
  };
  for (const auto& [url, key] : cases) {
    INFO(url);
    CHECK(cdxj::Surt(url) == key);
  }
  std::string status, mime;
  cdxj::HttpFields("HTTP/2 404\r\ncontent-type:  text/plain ; charset=utf-8\r\n\r\n",
                   &status, &mime);
  CHECK(status == "404");
  CHECK(mime == "text/plain");
  cdxj::HttpFields("HTTP/1.1 20x OK\r\nServer: x\r\n\r\n", &status, &mime);
  CHECK(status.empty());
  CHECK(mime.empty());
  CHECK(cdxj::Timestamp("2026-11-22T14:40:14Z") == "20261122144014");
  CHECK(cdxj::PathFor("/o/warc/crawl-00003.warc.gz") == "/o/warc/crawl-00003.cdxj");
}

TEST_CASE(
    "CDXJ: each WARC file's index, written as its records are and sorted when it "
    "closes, is what warcio cdx-index prints; IndexWarc makes the same from the file",
    "[engine][warc][cdxj]") {
  TempDir dir;
  WarcOptions o;
  o.dir = dir.path() + "/warc";
  o.rotate_bytes = 8192;
  {
    auto w = WarcWriter::Open(o);
    REQUIRE(w.ok());
    for (int i = 0; i < 60; ++i) {
      OwnedExchange ex = MakeExchange(i);
      // Other statuses and media types, one without any, a URL with a query.
      if (i % 5 == 1) ex.response_head = "HTTP/1.1 404 Not Found\r\n\r\n";
      if (i % 5 == 2) {
        ex.response_head =
            "HTTP/1.1 301 Moved\r\ncontent-type: text/plain; charset=x\r\n\r\n";
        ex.url += "?b=2&a=%221%22";
      }
      REQUIRE((*w)->Write(ex.View()).ok());
    }
    CHECK((*w)->Position().file_index >= 2);
    // Before the file closes: only the scratch lines, no index yet.
    const std::string open_file = cdxj::PathFor((*w)->CurrentPath());
    CHECK(std::filesystem::exists(open_file + ".open"));
    CHECK_FALSE(std::filesystem::exists(open_file));
    REQUIRE((*w)->Close().ok());
    CHECK_FALSE(std::filesystem::exists(open_file + ".open"));
  }
  const std::string diff = testing::CdxjNotAsWarcio(dir.path());
  CHECK(diff == "");
  for (const auto& entry : std::filesystem::directory_iterator(dir.path() + "/warc")) {
    const std::string path = entry.path().string();
    if (!path.ends_with(".warc.gz")) continue;
    const std::string written = testing::ReadText(cdxj::PathFor(path));
    CHECK_FALSE(written.empty());
    std::filesystem::remove(cdxj::PathFor(path));
    auto n = IndexWarc(path);
    REQUIRE(n.ok());
    CHECK(testing::ReadText(cdxj::PathFor(path)) == written);
    CHECK(*n == static_cast<uint64_t>(std::count(written.begin(), written.end(), '\n')));
  }
}

TEST_CASE(
    "CDXJ: a torn WARC tail or a file that is no WARC is refused, naming the offset",
    "[engine][warc][cdxj]") {
  TempDir dir;
  WarcOptions o;
  o.dir = dir.path() + "/warc";
  std::string path;
  {
    auto w = WarcWriter::Open(o);
    REQUIRE(w.ok());
    for (int i = 0; i < 3; ++i) REQUIRE((*w)->Write(MakeExchange(i).View()).ok());
    path = (*w)->CurrentPath();
  }
  const uint64_t size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 10);
  auto torn = IndexWarc(path);
  REQUIRE_FALSE(torn.ok());
  CHECK_THAT(torn.status().message(),
             Catch::Contains(path) && Catch::Contains("cut short"));
  {
    std::ofstream junk(path, std::ios::binary | std::ios::trunc);
    junk << "WARC/1.1\r\nnot gzip\r\n";
  }
  auto foreign = IndexWarc(path);
  REQUIRE_FALSE(foreign.ok());
  CHECK_THAT(foreign.status().message(), Catch::Contains("no gzip member at offset 0"));
  CHECK_FALSE(IndexWarc(dir.path() + "/none.warc.gz").ok());
}

TEST_CASE(
    "WARC revisits (WARC/1.1 6.7): a 304 and an identical payload are revisit records "
    "with the 1.1 profile, Refers-To, -Target-URI and -Date, the earlier payload's "
    "digest and no body; warcio reads every field; the CDXJ is warcio's",
    "[engine][warc][revisit]") {
  TempDir dir;
  WarcOptions o;
  o.dir = dir.path() + "/warc";
  std::string path, first_id, first_digest;
  OwnedExchange first = MakeExchange(7);
  {
    auto w = WarcWriter::Open(o);
    REQUIRE(w.ok());
    PreparedExchange full = (*w)->Prepare(first.View());
    first_id = full.response_id;
    first_digest = full.payload_digest;
    CHECK(first_digest == WarcDigest(first.body));
    REQUIRE((*w)->Write(full).ok());
    // A conditional request answered 304: no body, the digest of the
    // capture it refers to (not of the empty 304 body).
    OwnedExchange not_modified = first;
    not_modified.date = first.date + std::chrono::hours(24);
    not_modified.response_head = "HTTP/1.1 304 Not Modified\r\nETag: \"e1\"\r\n\r\n";
    not_modified.body.clear();
    Exchange a = not_modified.View();
    a.revisit = Revisit{Revisit::Profile::kServerNotModified, first_id, first.url,
                        first.date, first_digest};
    PreparedExchange ra = (*w)->Prepare(a);
    CHECK(ra.payload_digest == first_digest);
    REQUIRE((*w)->Write(ra).ok());
    // A 200 with the same payload: written without its body.
    OwnedExchange same = first;
    same.date = first.date + std::chrono::hours(48);
    Exchange b = same.View();
    b.revisit = Revisit{Revisit::Profile::kIdenticalPayloadDigest, first_id, first.url,
                        first.date, first_digest};
    REQUIRE((*w)->Write(b).ok());
    path = (*w)->CurrentPath();
    REQUIRE((*w)->Close().ok());
  }
  std::vector<Record> records = Parse(Gunzip(path));
  REQUIRE(records.size() == 1 + 3 * 2);
  CHECK(records[1].type == "response");
  for (size_t i : {3u, 5u}) {
    INFO("record " << i);
    CHECK(records[i].type == "revisit");
    CHECK(records[i].payload_digest == first_digest);
    CHECK(records[i].block.find("\r\n\r\n") == records[i].block.size() - 4);  // head only
  }
  CHECK(records[3].block.rfind("HTTP/1.1 304", 0) == 0);
  CHECK(records[5].block == first.response_head);

  // An independent reader: every revisit field, as the spec names it.
  testing::CommandResult index = testing::RunCommand(
      "warcio index '" + path +
      "' --fields=warc-type,warc-profile,warc-refers-to,warc-refers-to-target-uri,"
      "warc-refers-to-date,warc-payload-digest");
  INFO(index.output);
  REQUIRE(index.exit_code == 0);
  std::vector<boost::json::object> revisits;
  std::istringstream lines(index.output);
  for (std::string line; std::getline(lines, line);) {
    boost::json::object r = boost::json::parse(line).as_object();
    if (r.at("warc-type").as_string() == "revisit") revisits.push_back(r);
  }
  REQUIRE(revisits.size() == 2);
  const char* profiles[] = {
      "http://netpreserve.org/warc/1.1/revisit/server-not-modified",
      "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"};
  for (size_t i = 0; i < 2; ++i) {
    INFO(index.output);
    CHECK(revisits[i].at("warc-profile").as_string() == profiles[i]);
    CHECK(revisits[i].at("warc-refers-to").as_string() == first_id);
    CHECK(revisits[i].at("warc-refers-to-target-uri").as_string() == first.url);
    CHECK(revisits[i].at("warc-refers-to-date").as_string() == WarcDate(first.date));
    CHECK(revisits[i].at("warc-payload-digest").as_string() == first_digest);
  }
  CHECK(testing::CdxjNotAsWarcio(dir.path()) == "");
  CHECK_THAT(testing::ReadText(cdxj::PathFor(path)), Catch::Contains("warc/revisit"));
}

}  // namespace
}  // namespace crawler::output
