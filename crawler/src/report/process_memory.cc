// See process_memory.h.
#include "report/process_memory.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdio>

// jemalloc's control interface; null when jemalloc is not linked.
extern "C" int mallctl(const char* name, void* oldp, size_t* oldlenp, void* newp,
                       size_t newlen) __attribute__((weak));

namespace crawler::engine {

ProcessMemory ReadProcessMemory() {
  ProcessMemory m;
  if (std::FILE* f = std::fopen("/proc/self/statm", "re")) {
    unsigned long long size = 0, resident = 0;
    if (std::fscanf(f, "%llu %llu", &size, &resident) == 2) {
      m.rss = resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    }
    std::fclose(f);
  }
  if (mallctl != nullptr) {
    m.allocator = "jemalloc";
    uint64_t epoch = 1;
    size_t len = sizeof(epoch);
    mallctl("epoch", &epoch, &len, &epoch, len);  // refreshes the statistics
    size_t allocated = 0;
    len = sizeof(allocated);
    if (mallctl("stats.allocated", &allocated, &len, nullptr, 0) == 0)
      m.allocated = allocated;
    return m;
  }
  m.allocator = "glibc";
  struct mallinfo2 info = ::mallinfo2();
  m.allocated = info.uordblks + info.hblkhd;
  return m;
}

}  // namespace crawler::engine
