// SHA-1 throughput of the WARC digest code (crawler/src/sha1.cc), one thread.
//   build/tests/sha1_bench                          # SHA instructions if the CPU has them
//   CRAWLER_SHA1_PORTABLE=1 build/tests/sha1_bench  # the portable code
// Prints numbers; asserts nothing.
#include <chrono>
#include <algorithm>
#include <cstdio>
#include <string>

#include "sha1.h"

int main() {
  using crawler::engine::Sha1;
  std::string data(64 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131);
  double best = 1e300;
  unsigned first = 0;
  for (int round = 0; round < 3; ++round) {
    auto start = std::chrono::steady_clock::now();
    Sha1 sha;
    sha.Update(data);
    first = sha.Final()[0];
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::printf("sha1 (%s): %.0f MB/s over %zu MB, best of 3 (digest byte 0: %02x)\n",
              Sha1::HardwareAccelerated() ? "SHA instructions" : "portable", static_cast<double>(data.size()) / best / 1e6,
              data.size() >> 20, first);
}
