// Helpers the checkpoint's writer (checkpoint.cc) and loader
// (checkpoint_load.cc) share.
#ifndef CRAWLER_SRC_CHECKPOINT_CHECKPOINT_FILES_H_
#define CRAWLER_SRC_CHECKPOINT_CHECKPOINT_FILES_H_

#include <cstdint>
#include <string>

#include "base/status.h"

namespace crawler::checkpoint {

// kCorruption: "PATH: WHAT".
Status Damaged(const std::string& path, const std::string& what);
// 16 hex digits (a manifest's xxh3).
std::string Hex(uint64_t v);
// XXH3 of [from, from + bytes) of `path` (after an fsync of the file with
// `sync`); a file that ends before the range is named as damaged.
Result<uint64_t> HashRange(const std::string& path, uint64_t from, uint64_t bytes,
                           bool sync);
// The whole file; a missing one is kCorruption ("PATH: missing").
Result<std::string> ReadWhole(const std::string& path);

}  // namespace crawler::checkpoint

#endif  // CRAWLER_SRC_CHECKPOINT_CHECKPOINT_FILES_H_
