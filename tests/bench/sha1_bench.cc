// SHA-1 throughput of the WARC digests (crawler/src/sha1.h: OpenSSL EVP),
// one thread, over 64 MB in one piece and in 10 KB pieces (a page body).
//   build/tests/sha1_bench
// Prints numbers; asserts nothing. Sample (2-core VM with SHA-NI), measured
// when the hand-written SHA-NI code was replaced: ours 1,543 / 1,486 MB/s,
// OpenSSL 1,820 / 1,729 MB/s (1.18x / 1.16x).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "base/sha1.h"

int main() {
  using crawler::Sha1;
  std::string data(64 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131);
  for (size_t piece : {data.size(), size_t{10} << 10}) {
    double best = 1e300;
    unsigned first = 0;
    for (int round = 0; round < 3; ++round) {
      auto start = std::chrono::steady_clock::now();
      for (size_t at = 0; at < data.size(); at += piece) {
        Sha1 sha;
        sha.Update(std::string_view(data).substr(at, piece));
        first = sha.Final()[0];
      }
      best = std::min(
          best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                    .count());
    }
    std::printf(
        "sha1 (OpenSSL EVP), pieces of %zu B: %.0f MB/s over %zu MB, best of 3 (digest "
        "byte 0: %02x)\n",
        piece, static_cast<double>(data.size()) / best / 1e6, data.size() >> 20, first);
  }
}
