// SHA-1 for WARC payload and block digests, which the WARC ecosystem writes
// as "sha1:<base32>". Not for security: WARC readers check these digests for
// integrity. OpenSSL's EVP digest does the hashing (its own SHA-NI / AVX2
// paths): measured 1.16-1.18x the hand-written SHA-NI code this replaced
// (build/tests/sha1_bench, 10 KB pieces and 64 MB). Incremental; one object
// per digest; any thread with its own object. In base/: the WARC writer,
// the revisit rules (an unchanged payload's digest) and the cluster's Redis
// scripts (EVALSHA names a script by its SHA-1) all use it.
#ifndef CRAWLER_BASE_SHA1_H_
#define CRAWLER_BASE_SHA1_H_

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

struct evp_md_ctx_st;

namespace crawler {

class Sha1 {
 public:
  Sha1();
  ~Sha1();
  Sha1(const Sha1&) = delete;
  Sha1& operator=(const Sha1&) = delete;
  void Update(std::string_view data);
  std::array<uint8_t, 20> Final();

 private:
  evp_md_ctx_st* ctx_;
};

// RFC 4648 base32 (upper case, no padding needed for 20 bytes).
std::string Base32(const uint8_t* data, size_t n);
// "sha1:" + Base32(SHA-1(data)).
std::string WarcDigest(std::string_view data);
// The same over `parts` one after another (a block not joined first).
std::string WarcDigest(std::initializer_list<std::string_view> parts);

}  // namespace crawler

#endif  // CRAWLER_BASE_SHA1_H_
