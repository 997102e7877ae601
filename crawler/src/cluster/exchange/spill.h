// The outbox's spill files (cluster.h, Backpressure; outbox.h keeps the RAM
// part): batches held past cluster.outbox_ram_urls go, per shard, to
// OUT/cluster-outbox/SHARD-N.txt (immutable files of outbox lines, N growing
// across the node's life), are read back in order as the shard's stream has
// room, and a resumed node takes back what a crash left (Restore). Files
// only, no Redis. Not thread-safe: the Cluster guards it with spill_mu_.
// Unit-tested on real files (cluster_spill_test.cc).
//
// The rules it keeps:
// - a file is written whole or not at all (renamed into place); it is
//   fsynced by the next checkpoint's writer (Cut names it and the directory),
//   so a checkpoint never counts a page done whose links are in a file a
//   power cut could lose;
// - a file read back is deleted only once a checkpoint cut after that is
//   committed (Committed): until then the checkpoint a resume would start
//   from needs it;
// - a resumed node takes back every file, in the order they were made; a
//   name or a line not of this job is an error naming the file, never
//   skipped.
#ifndef CRAWLER_CLUSTER_SPILL_H_
#define CRAWLER_CLUSTER_SPILL_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "cluster/exchange/outbox.h"

namespace crawler::cluster {

class SpillFiles {
 public:
  SpillFiles(std::string dir, uint32_t shards, uint32_t batch_urls);

  const std::string& dir() const { return dir_; }
  // URLs in files, not read back yet.
  uint64_t urls() const { return urls_; }
  // The shards that have files.
  std::vector<uint32_t> Shards() const;

  // `batches` (all of one shard) into a new file. Errors (disk full or
  // gone): nothing is written; the caller keeps the batches.
  Status Write(uint32_t shard, const std::deque<OutBatch>& batches);
  // Up to `max` batches of `shard`, of up to batch_urls URLs each, read back
  // in the order they were written.
  std::vector<OutBatch> Read(uint32_t shard, uint64_t max);

  // Checkpoint `sequence` is cut: the files it must fsync (and, if any, the
  // directory, for their names). Files read back before it are deleted once
  // it is committed.
  std::vector<std::string> Cut(uint64_t sequence);
  void Committed(uint64_t sequence);

  // A resumed node: every file in dir() taken back (a ".tmp" write cut
  // short is removed; an empty file too). Returns their URLs. Errors: a
  // name not SHARD-N.txt with SHARD < shards, a malformed line, a read.
  Result<uint64_t> Restore();

 private:
  struct File {
    std::string path;
    uint64_t urls = 0;    // lines in the file
    uint64_t offset = 0;  // bytes read back (and sent) so far
  };
  const std::string dir_;
  const uint32_t shards_;
  const uint32_t batch_urls_;
  std::map<uint32_t, std::deque<File>> files_;
  uint64_t urls_ = 0;
  uint64_t made_ = 0;                   // N of the last file made
  std::vector<std::string> read_back_;  // since the last cut
  std::map<uint64_t, std::vector<std::string>> read_back_cut_;
};

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_SPILL_H_
