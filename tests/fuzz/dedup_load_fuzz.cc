// libFuzzer target: the dedup.bin loader (Filter::Read) on arbitrary bytes.
// It must return a filter or an error, never crash, hang or over-allocate;
// a filter it returns must answer queries.
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "dedup/filter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::FILE* f = ::fmemopen(const_cast<uint8_t*>(data), size, "rb");
  if (f == nullptr) return 0;
  auto filter = crawler::dedup::Filter::Read(f, "dedup.bin");
  std::fclose(f);
  if (filter.ok()) {
    (void)(*filter)->Contains("http://a.test/");
    (void)(*filter)->Stats();
  }
  return 0;
}
