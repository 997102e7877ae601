// See process_memory.h.
#include "report/process_memory.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdio>

// jemalloc's control interface; null when jemalloc is not linked.
extern "C" int mallctl(const char* name, void* oldp, size_t* oldlenp, void* newp,
                       size_t newlen) __attribute__((weak));

namespace crawler::report {

namespace {

// A jemalloc statistic in bytes (0 if it cannot be read).
uint64_t JemallocStat(const char* name) {
  size_t value = 0;
  size_t len = sizeof(value);
  return mallctl(name, &value, &len, nullptr, 0) == 0 ? value : 0;
}

}  // namespace

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
    m.allocated = JemallocStat("stats.allocated");
    m.allocator_resident = JemallocStat("stats.resident");
    return m;
  }
  m.allocator = "glibc";
  struct mallinfo2 info = ::mallinfo2();
  m.allocated = info.uordblks + info.hblkhd;
  m.allocator_resident = info.arena + info.hblkhd;
  return m;
}

}  // namespace crawler::report
