// See sha1.h.
#include "base/sha1.h"

#include <openssl/evp.h>

#include <new>

namespace crawler {
namespace {

// Fetched once (OpenSSL 3 looks an implicit EVP_sha1() up at every init).
const EVP_MD* Sha1Md() {
  static EVP_MD* md = EVP_MD_fetch(nullptr, "SHA1", nullptr);
  return md;
}

}  // namespace

Sha1::Sha1() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr || EVP_DigestInit_ex(ctx_, Sha1Md(), nullptr) != 1)
    throw std::bad_alloc();
}

Sha1::~Sha1() { EVP_MD_CTX_free(ctx_); }

void Sha1::Update(std::string_view data) {
  EVP_DigestUpdate(ctx_, data.data(), data.size());
}

std::array<uint8_t, 20> Sha1::Final() {
  std::array<uint8_t, 20> out{};
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx_, out.data(), &n);
  return out;
}

std::string Base32(const uint8_t* data, size_t n) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (size_t i = 0; i < n; ++i) {
    buffer = (buffer << 8) | data[i];
    bits += 8;
    while (bits >= 5) {
      out += kAlphabet[(buffer >> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += kAlphabet[(buffer << (5 - bits)) & 31];
  while (out.size() % 8 != 0) out += '=';
  return out;
}

std::string WarcDigest(std::string_view data) { return WarcDigest({data}); }

std::string WarcDigest(std::initializer_list<std::string_view> parts) {
  Sha1 sha;
  for (std::string_view part : parts) sha.Update(part);
  std::array<uint8_t, 20> d = sha.Final();
  return "sha1:" + Base32(d.data(), d.size());
}

}  // namespace crawler
