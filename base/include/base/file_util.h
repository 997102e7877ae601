// File helpers every library shares: the I/O error message, directory fsync
// and the one atomic-write protocol (LevelDB / RocksDB style):
//
//   PATH.tmp <- contents; fflush; fsync; close; rename PATH.tmp -> PATH;
//   fsync the directory.   On any failure PATH.tmp is removed and PATH is
//   left as it was.
//
// A crash at any moment leaves either the old PATH or the new one, never a
// mix. Stateless free functions; thread-safe for distinct paths.
#ifndef BASE_FILE_UTIL_H_
#define BASE_FILE_UTIL_H_

#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace crawler {

// kIoError "PATH: WHAT: strerror(errno)". Call it right after the failing call.
Status IoError(const std::string& path, const std::string& what);

// fsync of a directory (so a rename or a new file in it survives a power cut).
[[nodiscard]] Status SyncDir(const std::string& dir);

// Swaps two existing paths (files or directories) in one atomic step:
// renameat2(RENAME_EXCHANGE), Linux 3.15+ on ext4, xfs, btrfs, tmpfs. On a
// file system that cannot (EINVAL), kNotSupported; any other failure,
// kIoError. Neither path is changed on failure.
[[nodiscard]] Status ExchangePaths(const std::string& a, const std::string& b);

// The protocol above; `write` fills the temp file (and returns its own
// error, naming the file, if it fails). `durable` = false skips both fsyncs
// (for files that are rewritten every few seconds and merely must never be
// seen half-written, such as stats.json). `mode` is the new file's (less
// the umask): 0600 for files that hold configuration (docs/cluster.md).
[[nodiscard]] Status WriteFileAtomic(const std::string& path,
                                     const std::function<Status(std::FILE*)>& write,
                                     bool durable = true, unsigned mode = 0666);
[[nodiscard]] Status WriteFileAtomic(const std::string& path, std::string_view contents,
                                     bool durable = true, unsigned mode = 0666);

// Raises this process's soft RLIMIT_NOFILE to its hard limit (Debian's
// default soft limit is 1,024: a crawl's connections, spool files, WARC,
// RocksDB and Redis share it). Returns the soft limit now.
uint64_t RaiseOpenFileLimit();

}  // namespace crawler

#endif  // BASE_FILE_UTIL_H_
