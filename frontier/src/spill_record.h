// The spill file's record (see frontier/frontier.h), through the shared
// little-endian codec: depth u32 | redirects u32 | attempt u32 | kind u32
// (0 page, 1 sitemap; | 0x100 a revisit) | url_len u32 | ref_len u32 | url |
// referrer.
#ifndef FRONTIER_SPILL_RECORD_H_
#define FRONTIER_SPILL_RECORD_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "base/bytes.h"
#include "base/status.h"
#include "frontier/frontier.h"

namespace crawler::frontier {

// The kind field's bit for UrlEntry::revisit.
inline constexpr uint32_t kRevisitBit = 0x100;

void EncodeSpillRecord(const UrlEntry& e, ByteWriter* w);

// Reads the next record; false at the end of the file or on a short record.
// *bytes: the record's size on disk.
bool ReadSpillRecord(std::FILE* f, UrlEntry* e, uint64_t* bytes);

// Calls f(entry) for `count` records of `path` from byte `offset`; an error
// names the file (one that cannot be opened, or ends early), or is f's.
Status ForEachSpillRecord(const std::string& path, uint64_t offset, uint64_t count,
                          const std::function<Status(UrlEntry)>& f);

}  // namespace crawler::frontier

#endif  // FRONTIER_SPILL_RECORD_H_
