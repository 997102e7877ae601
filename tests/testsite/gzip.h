// One gzip member of `data` (zlib), for test servers that send
// Content-Encoding: gzip. Shared by crawler-testsite and the fetcher tests.
#ifndef TESTS_TESTSITE_GZIP_H_
#define TESTS_TESTSITE_GZIP_H_

#include <zlib.h>

#include <string>

namespace crawler::testing {

// `data` deflated: `window_bits` as zlib's deflateInit2 takes them (15 +
// 16: gzip, 15: zlib-wrapped, -15: raw); `level` 1 fastest, 9 smallest.
inline std::string Deflate(const std::string& data, int window_bits,
                           int level = Z_DEFAULT_COMPRESSION) {
  z_stream z{};
  deflateInit2(&z, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, static_cast<uLong>(data.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  return out;
}

inline std::string Gzip(const std::string& data, int level = Z_DEFAULT_COMPRESSION) {
  return Deflate(data, 15 + 16, level);
}

}  // namespace crawler::testing

#endif  // TESTS_TESTSITE_GZIP_H_
