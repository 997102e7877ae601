// crawler/src/engine/decoder.h: each Content-Encoding undone whole, fed in
// any pieces; a stream cut short not ended; a broken one an error naming
// its coding; an unknown coding named.
#include "engine/decoder.h"

#include <brotli/encode.h>
#include <zstd.h>

#include <catch2/catch.hpp>
#include <string>

#include "gzip.h"

namespace crawler::engine {
namespace {

std::string Text() {
  std::string s;
  for (int i = 0; i < 20000; ++i) s += "line " + std::to_string(i * 7919 % 1000) + "\n";
  return s;  // ~190 KB: more than one 16 KB chunk out of every decoder
}

std::string Brotli(const std::string& in) {
  size_t size = BrotliEncoderMaxCompressedSize(in.size());
  std::string out(size, '\0');
  REQUIRE(BrotliEncoderCompress(5, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_TEXT, in.size(),
                                reinterpret_cast<const uint8_t*>(in.data()), &size,
                                reinterpret_cast<uint8_t*>(out.data())) == BROTLI_TRUE);
  out.resize(size);
  return out;
}

std::string Zstd(const std::string& in) {
  std::string out(ZSTD_compressBound(in.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 3);
  REQUIRE(ZSTD_isError(n) == 0);
  out.resize(n);
  return out;
}

struct Decoded {
  bool fed = true, ended = false;
  std::string body, error;
};

// `coded` fed to the decoder for `coding` in pieces of `piece` bytes.
Decoded Decode(const std::string& coding, const std::string& coded, size_t piece) {
  std::string error;
  std::unique_ptr<ContentDecoder> d = ContentDecoder::For(coding, &error);
  REQUIRE(error.empty());
  REQUIRE(d != nullptr);
  Decoded out;
  auto sink = [&](const char* data, size_t size) {
    out.body.append(data, size);
    return true;
  };
  for (size_t i = 0; i < coded.size() && out.fed; i += piece)
    out.fed = d->Feed(coded.data() + i, std::min(piece, coded.size() - i), sink);
  out.ended = d->Ended();
  out.error = d->error();
  return out;
}

TEST_CASE(
    "ContentDecoder: gzip, deflate (wrapped or raw), br, zstd and a chain come out whole "
    "in any pieces; cut short they have not ended; broken, an error names the coding",
    "[engine][decoder]") {
  const std::string text = Text();
  const std::pair<std::string, std::string> cases[] = {
      {"gzip", crawler::testing::Gzip(text)},
      {"x-gzip", crawler::testing::Gzip(text)},
      {"deflate", crawler::testing::Deflate(text, 15)},
      {"deflate", crawler::testing::Deflate(text, -15)},
      {"br", Brotli(text)},
      {"zstd", Zstd(text)},
      {"zstd", Zstd(text.substr(0, 1000)) + Zstd(text.substr(1000))},  // two frames
      {"gzip, br", Brotli(crawler::testing::Gzip(text))},  // gzip applied first
      {"identity, GZIP", crawler::testing::Gzip(text)},
  };
  for (const auto& [coding, coded] : cases) {
    for (size_t piece : {size_t{1}, size_t{7}, size_t{1} << 20}) {
      INFO(coding << ", " << coded.size() << " bytes in pieces of " << piece);
      const Decoded whole = Decode(coding, coded, piece);
      CHECK(whole.fed);
      CHECK(whole.ended);
      CHECK(whole.body == text);
      // Cut anywhere short of its end: fed fine, not ended.
      for (size_t cut : {coded.size() / 2, coded.size() - 1}) {
        const Decoded part = Decode(coding, coded.substr(0, cut), piece);
        CHECK(part.fed);
        CHECK_FALSE(
            part.ended);  // one byte short: the body may be whole, not the trailer
        if (cut == coded.size() / 2) CHECK(part.body.size() < text.size());
      }
    }
    // Garbage in the middle: an error naming the coding (its first).
    std::string broken = coded;
    for (size_t i = broken.size() / 3; i < broken.size() / 3 + 64; ++i)
      broken[i] = '\xff';
    const Decoded bad = Decode(coding, broken, 4096);
    INFO(coding << ": " << bad.error);
    if (!bad.fed) CHECK(bad.error.find("broken") != std::string::npos);
    CHECK((!bad.fed || !bad.ended || bad.body != text));
  }
}

TEST_CASE(
    "ContentDecoder: identity or none is nothing to undo; an unknown coding is named; "
    "a sink that stops stops it",
    "[engine][decoder]") {
  std::string error;
  CHECK(ContentDecoder::For("", &error) == nullptr);
  CHECK(error.empty());
  CHECK(ContentDecoder::For(" identity ", &error) == nullptr);
  CHECK(error.empty());
  CHECK(ContentDecoder::For("gzip, compress", &error) == nullptr);
  CHECK(error == "unknown Content-Encoding \"compress\"");
  // As the fetcher hands it: each header's value after a comma, CRLF kept.
  CHECK(ContentDecoder::For(", gzip\r\n", &error) != nullptr);
  CHECK(error.empty());

  std::unique_ptr<ContentDecoder> d = ContentDecoder::For("gzip", &error);
  REQUIRE(d != nullptr);
  const std::string coded = crawler::testing::Gzip(Text());
  size_t got = 0;
  CHECK_FALSE(d->Feed(coded.data(), coded.size(), [&](const char*, size_t size) {
    got += size;
    return false;
  }));
  CHECK(got > 0);
  CHECK(d->error().empty());  // the sink's reason, not the stream's
}

}  // namespace
}  // namespace crawler::engine
