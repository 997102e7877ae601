// OUT/seen.log: a cluster node's durable record of what its dedup filter
// admitted, by shard, so that another node taking a shard over (a node that
// died or left, cluster.shared_dir) can load that shard's part of the seen
// set: the filter itself is one structure for all shards and cannot be
// split. Written only when cluster.shared_dir is set.
//
// Records of 24 bytes, little-endian (base/bytes.h): shard u32 | 0 u32 |
// KeyHash lo u64 | hi u64 (dedup::HashKey of the normalized URL). A
// checkpoint records the log's length (fsynced before the manifest), so a
// reader takes exactly the records of that checkpoint; a resumed node cuts
// the log back to it. A node that loads a shard appends the loaded records
// to its own log, so every node's log holds the whole seen set of the shards
// it holds.
//
// Thread-safe: one write(2) per batch under AppendLog's mutex.
#ifndef CRAWLER_SEEN_LOG_H_
#define CRAWLER_SEEN_LOG_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "dedup/hash.h"
#include "output/append_log.h"

namespace crawler::output {

struct SeenRecord {
  uint32_t shard = 0;
  dedup::KeyHash hash;
};

class SeenLog {
 public:
  static constexpr size_t kRecordBytes = 24;
  static Result<std::unique_ptr<SeenLog>> Open(const std::string& path);
  [[nodiscard]] Status Append(const std::vector<SeenRecord>& records);
  uint64_t Bytes() const { return file_->Bytes(); }
  int fd() const { return file_->fd(); }
  const std::string& path() const { return file_->path(); }

  // The first `bytes` of PATH (a checkpoint's length), the records whose
  // shard `want` accepts. Errors: unreadable, shorter than `bytes`, or
  // `bytes` not a whole number of records (named).
  static Result<std::vector<SeenRecord>> Read(const std::string& path, uint64_t bytes,
                                              const std::function<bool(uint32_t)>& want);

 private:
  explicit SeenLog(std::unique_ptr<AppendLog> file) : file_(std::move(file)) {}
  std::unique_ptr<AppendLog> file_;
};

}  // namespace crawler::output

#endif  // CRAWLER_SEEN_LOG_H_
