// The process's memory as the kernel and the allocator count it: resident
// set size (/proc/self/statm) and the heap bytes in use. The crawler links
// jemalloc (crawler/CMakeLists.txt): its `stats.allocated`, read through
// mallctl when that symbol is there (a weak reference, so the test programs
// and the sanitizer builds, on glibc's malloc, link without it); glibc's
// mallinfo2 otherwise. Any thread.
#ifndef CRAWLER_PROCESS_MEMORY_H_
#define CRAWLER_PROCESS_MEMORY_H_

#include <cstdint>
#include <string>

namespace crawler::report {

struct ProcessMemory {
  uint64_t rss = 0;        // 0 when /proc cannot be read
  uint64_t allocated = 0;  // heap bytes in use by the program's allocations
  // Pages the allocator holds resident: its own metadata and the freed
  // pages it keeps for reuse beside `allocated` (jemalloc's
  // stats.resident; glibc: the arena's bytes, mallinfo2's arena + hblkhd).
  uint64_t allocator_resident = 0;
  std::string allocator;  // "jemalloc" or "glibc"
};

ProcessMemory ReadProcessMemory();

}  // namespace crawler::report

#endif  // CRAWLER_PROCESS_MEMORY_H_
