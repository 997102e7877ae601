// See decoder.h.
#include "engine/decoder.h"

#include <brotli/decode.h>
#include <zlib.h>
#include <zstd.h>

#include <array>

#include "base/ascii.h"

namespace crawler::engine {

// One coding: Feed passes what it decodes on to `out`; false: broken
// (*error set) or `out` said stop.
struct ContentDecoder::Stage {
  virtual ~Stage() = default;
  virtual bool Feed(const char* data, size_t size, const Sink& out,
                    std::string* error) = 0;
  virtual bool Ended() const = 0;
};

namespace {

constexpr size_t kChunk = 16 * 1024;

// gzip and deflate. deflate is zlib-wrapped by RFC 9110, but some servers
// send it raw: its first two bytes tell (a zlib header is a multiple of 31
// with method 8), as libcurl tells it.
class ZlibStage : public ContentDecoder::Stage {
 public:
  explicit ZlibStage(bool gzip) : gzip_(gzip) {
    if (gzip) Init(15 + 32);  // gzip, or zlib-wrapped: zlib tells
  }
  ~ZlibStage() override {
    if (initialized_) inflateEnd(&z_);
  }
  bool Feed(const char* data, size_t size, const ContentDecoder::Sink& out,
            std::string* error) override {
    if (initialized_) return Inflate(data, size, out, error);
    head_.append(data, size);
    if (head_.size() < 2) return true;
    const auto b0 = static_cast<unsigned char>(head_[0]);
    const auto b1 = static_cast<unsigned char>(head_[1]);
    Init((b0 & 0x0f) == 8 && (b0 * 256 + b1) % 31 == 0 ? 15 : -15);
    const std::string head = std::move(head_);
    return Inflate(head.data(), head.size(), out, error);
  }
  bool Ended() const override { return ended_; }

 private:
  void Init(int window_bits) {
    inflateInit2(&z_, window_bits);
    initialized_ = true;
  }
  bool Inflate(const char* data, size_t size, const ContentDecoder::Sink& out,
               std::string* error) {
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
    z_.avail_in = static_cast<uInt>(size);
    std::array<char, kChunk> buf;
    bool full = false;  // output may be waiting inside zlib
    while ((z_.avail_in > 0 || full) && !ended_) {
      z_.next_out = reinterpret_cast<Bytef*>(buf.data());
      z_.avail_out = static_cast<uInt>(buf.size());
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
        *error = std::string(gzip_ ? "gzip" : "deflate") + " stream broken (" +
                 (z_.msg != nullptr ? z_.msg : "zlib error " + std::to_string(rc)) + ")";
        return false;
      }
      ended_ = rc == Z_STREAM_END;
      const size_t made = buf.size() - z_.avail_out;
      full = z_.avail_out == 0;
      if (made > 0 && !out(buf.data(), made)) return false;
      if (rc == Z_BUF_ERROR && made == 0) break;  // no progress: needs more input
    }
    return true;
  }

  z_stream z_{};
  const bool gzip_;
  bool initialized_ = false;
  std::string head_;  // deflate: its first bytes, until two tell its kind
  bool ended_ = false;
};

class BrotliStage : public ContentDecoder::Stage {
 public:
  BrotliStage() : s_(BrotliDecoderCreateInstance(nullptr, nullptr, nullptr)) {}
  ~BrotliStage() override { BrotliDecoderDestroyInstance(s_); }
  bool Feed(const char* data, size_t size, const ContentDecoder::Sink& out,
            std::string* error) override {
    if (ended_) return true;
    const auto* in = reinterpret_cast<const uint8_t*>(data);
    size_t avail_in = size;
    std::array<uint8_t, kChunk> buf;
    for (;;) {
      uint8_t* next_out = buf.data();
      size_t avail_out = buf.size();
      BrotliDecoderResult rc = BrotliDecoderDecompressStream(
          s_, &avail_in, &in, &avail_out, &next_out, nullptr);
      if (rc == BROTLI_DECODER_RESULT_ERROR) {
        *error = std::string("br stream broken (") +
                 BrotliDecoderErrorString(BrotliDecoderGetErrorCode(s_)) + ")";
        return false;
      }
      const size_t made = buf.size() - avail_out;
      if (made > 0 && !out(reinterpret_cast<const char*>(buf.data()), made)) return false;
      ended_ = rc == BROTLI_DECODER_RESULT_SUCCESS;
      if (rc != BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT) return true;
    }
  }
  bool Ended() const override { return ended_; }

 private:
  BrotliDecoderState* s_;
  bool ended_ = false;
};

// zstd: a body may hold several frames; it has ended when the last one
// did.
class ZstdStage : public ContentDecoder::Stage {
 public:
  ZstdStage() : s_(ZSTD_createDStream()) {}
  ~ZstdStage() override { ZSTD_freeDStream(s_); }
  bool Feed(const char* data, size_t size, const ContentDecoder::Sink& out,
            std::string* error) override {
    ZSTD_inBuffer in{data, size, 0};
    std::array<char, kChunk> buf;
    while (in.pos < in.size || flushing_) {
      ZSTD_outBuffer o{buf.data(), buf.size(), 0};
      const size_t in_before = in.pos;
      const size_t rc = ZSTD_decompressStream(s_, &o, &in);
      if (ZSTD_isError(rc) != 0) {
        *error = std::string("zstd stream broken (") + ZSTD_getErrorName(rc) + ")";
        return false;
      }
      if (o.pos > 0 && !out(buf.data(), o.pos)) return false;
      if (o.pos > 0 || in.pos > in_before) ended_ = rc == 0;
      flushing_ = o.pos == o.size;  // more may be waiting inside
    }
    return true;
  }
  bool Ended() const override { return ended_; }

 private:
  ZSTD_DStream* s_;
  bool ended_ = false;
  bool flushing_ = false;
};

}  // namespace

ContentDecoder::~ContentDecoder() = default;

std::unique_ptr<ContentDecoder> ContentDecoder::For(std::string_view content_encoding,
                                                    std::string* error) {
  error->clear();
  std::unique_ptr<ContentDecoder> d(new ContentDecoder);
  for (std::string_view rest = content_encoding; !rest.empty();) {
    const size_t comma = rest.find(',');
    const std::string coding =
        ascii::LowerAscii(ascii::Trim(rest.substr(0, comma), ascii::kWhitespace));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    std::unique_ptr<Stage> stage;
    if (coding == "gzip" || coding == "x-gzip")
      stage = std::make_unique<ZlibStage>(true);
    else if (coding == "deflate")
      stage = std::make_unique<ZlibStage>(false);
    else if (coding == "br")
      stage = std::make_unique<BrotliStage>();
    else if (coding == "zstd")
      stage = std::make_unique<ZstdStage>();
    else if (coding.empty() || coding == "identity")
      continue;
    else {
      *error = "unknown Content-Encoding \"" + coding + "\"";
      return nullptr;
    }
    d->stages_.insert(d->stages_.begin(), std::move(stage));  // undone last first
  }
  if (d->stages_.empty()) return nullptr;
  return d;
}

bool ContentDecoder::Feed(const char* data, size_t size, const Sink& sink) {
  return FeedFrom(0, data, size, sink);
}

bool ContentDecoder::FeedFrom(size_t stage, const char* data, size_t size,
                              const Sink& sink) {
  if (stage == stages_.size()) return sink(data, size);
  return stages_[stage]->Feed(
      data, size,
      [&](const char* d, size_t n) { return FeedFrom(stage + 1, d, n, sink); }, &error_);
}

bool ContentDecoder::Ended() const {
  for (const auto& s : stages_)
    if (!s->Ended()) return false;
  return true;
}

}  // namespace crawler::engine
