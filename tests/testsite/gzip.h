// One gzip member of `data` (zlib), for test servers that send
// Content-Encoding: gzip. Shared by crawler-testsite and the fetcher tests.
#ifndef TESTS_TESTSITE_GZIP_H_
#define TESTS_TESTSITE_GZIP_H_

#include <zlib.h>

#include <string>

namespace crawler::testing {

// `level`: zlib's (1 fastest, 9 smallest).
inline std::string Gzip(const std::string& data, int level = Z_DEFAULT_COMPRESSION) {
  z_stream z{};
  deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
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

}  // namespace crawler::testing

#endif  // TESTS_TESTSITE_GZIP_H_
