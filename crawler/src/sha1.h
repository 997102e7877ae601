// SHA-1 (FIPS 180-4) for WARC payload and block digests, which the WARC
// ecosystem writes as "sha1:<base32>". Not for security: WARC readers check
// these digests for integrity. Incremental; one object per digest; any thread
// with its own object.
#ifndef CRAWLER_SHA1_H_
#define CRAWLER_SHA1_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace crawler::engine {

class Sha1 {
 public:
  Sha1();
  void Update(std::string_view data);
  std::array<uint8_t, 20> Final();
  // True when blocks go through the CPU's SHA instructions (x86 SHA-NI);
  // CRAWLER_SHA1_PORTABLE=1 in the environment forces the portable code.
  static bool HardwareAccelerated();

 private:
  void Block(const uint8_t* p);
  uint32_t h_[5];
  uint8_t buf_[64];
  uint64_t length_ = 0;  // bytes
  size_t used_ = 0;
};

// RFC 4648 base32 (upper case, no padding needed for 20 bytes).
std::string Base32(const uint8_t* data, size_t n);
// "sha1:" + Base32(SHA-1(data)).
std::string WarcDigest(std::string_view data);

}  // namespace crawler::engine

#endif  // CRAWLER_SHA1_H_
