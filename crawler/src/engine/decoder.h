// A response body's Content-Encoding undone as it streams in: gzip
// (x-gzip), deflate (zlib-wrapped or raw, as libcurl takes it), br, zstd,
// and chains of them ("gzip, br": applied in that order, undone in
// reverse); identity is nothing to undo.
//
// Why not libcurl's own decoding (CURLOPT_HTTP_CONTENT_DECODING): 7.88
// does not check that a compressed stream ended. A gzip body cut at its
// Content-Length passes as whole (`curl --compressed` exits 0 on it), so a
// piece of a page was archived and parsed as the page (crawler-testsite
// --web --page-fault gzip; testsite_crawl_test "*reset mid-body*"). Here
// Finish() says whether every stream ended: one that did not is a body cut
// mid-way (retry.h, BodyCut), fetched again. The decoding itself is the
// libraries' (zlib, brotli, zstd); this file only drives them.
#ifndef CRAWLER_ENGINE_DECODER_H_
#define CRAWLER_ENGINE_DECODER_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace crawler::engine {

class ContentDecoder {
 public:
  // Receives decoded bytes; false stops the decoding (the caller's own
  // reason: a size cap, a spool that cannot be written).
  using Sink = std::function<bool(const char* data, size_t size)>;

  // The decoder for a Content-Encoding value (every such header's values,
  // comma-separated, blanks and CRLF around each). nullptr with *error
  // empty: nothing to undo; nullptr with *error set: a coding it does not
  // know, named there.
  static std::unique_ptr<ContentDecoder> For(std::string_view content_encoding,
                                             std::string* error);
  ~ContentDecoder();

  // Decodes `size` more bytes into `sink`. False: the stream is broken
  // (error() says how) or the sink said stop (error() empty).
  bool Feed(const char* data, size_t size, const Sink& sink);
  // Whether every stream reached its end (bytes after the end are
  // ignored, as libcurl does).
  bool Ended() const;
  const std::string& error() const { return error_; }

  struct Stage;

 private:
  ContentDecoder() = default;
  bool FeedFrom(size_t stage, const char* data, size_t size, const Sink& sink);

  std::vector<std::unique_ptr<Stage>> stages_;  // the last applied first
  std::string error_;
};

}  // namespace crawler::engine

#endif  // CRAWLER_ENGINE_DECODER_H_
