// The spill file's record (see frontier/frontier.h), through the shared
// little-endian codec: depth u32 | redirects u32 | attempt u32 | kind u32
// (0 page, 1 sitemap) | url_len u32 | ref_len u32 | url | referrer.
#ifndef FRONTIER_SPILL_RECORD_H_
#define FRONTIER_SPILL_RECORD_H_

#include <cstdint>
#include <cstdio>

#include "base/bytes.h"
#include "frontier/frontier.h"

namespace crawler::frontier {

void EncodeSpillRecord(const UrlEntry& e, ByteWriter* w);

// Reads the next record; false at the end of the file or on a short record.
// *bytes: the record's size on disk.
bool ReadSpillRecord(std::FILE* f, UrlEntry* e, uint64_t* bytes);

}  // namespace crawler::frontier

#endif  // FRONTIER_SPILL_RECORD_H_
