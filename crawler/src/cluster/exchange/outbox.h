// The RAM part of a cluster node's outbox (cluster.h, Exchange and
// Backpressure): links for other nodes' shards, batched by shard, chosen for
// sending under each shard's lag limit, held when over it, and what a
// checkpoint cut must keep. Pure logic, no Redis and no files: the exchange
// thread sends what Select gives and reports each reply (Confirmed, Hold);
// the spill files (spill.h, sender.cc) take what TakeHeld gives and feed back
// through Sending. Not thread-safe: the Cluster guards it with its mutex.
// Unit-tested without Redis (cluster_outbox_test.cc).
//
// The rules it keeps:
// - a batch holds batch_urls URLs at most (one stream entry), and goes out
//   when full or batch_ms after its first URL;
// - a shard gets no more batches while its lag (entries its owner has not
//   read: the last lag Redis reported, plus batches sent since) is at
//   max_lag_batches, so Redis holds at most shards x max_lag_batches
//   entries however slow an owner is; held batches go before new ones;
// - every URL is counted in queued_urls from Add until Redis confirmed its
//   batch (in RAM, in flight or in a spill file), so the node is not idle
//   while any is unconfirmed;
// - a cut (AppendCut) holds every URL in RAM not yet confirmed: the ones
//   filling, full, held, and in flight (sending).
#ifndef CRAWLER_CLUSTER_OUTBOX_H_
#define CRAWLER_CLUSTER_OUTBOX_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "frontier/frontier.h"

namespace crawler::cluster {

// A batch of URLs for one shard's stream: wire lines, uncompressed.
struct OutBatch {
  uint32_t shard = 0;
  uint32_t urls = 0;
  std::string lines;
  std::chrono::steady_clock::time_point first{};  // its first URL's arrival
};

class Outbox {
 public:
  using Clock = std::chrono::steady_clock;
  Outbox(uint32_t shards, uint32_t batch_urls, std::chrono::milliseconds batch_ms,
         uint64_t max_lag_batches);

  // A URL for `shard`'s owner, at `now`.
  void Add(uint32_t shard, const frontier::UrlEntry& entry, Clock::time_point now);
  // The batches to send now: held ones first (they are older), then full
  // ones and those batch_ms old (all with `flush_all`), each shard up to its
  // room; the rest are held. They are in flight until Sent.
  std::vector<OutBatch> Select(bool flush_all, Clock::time_point now);
  // Redis is down or refusing: the batches due now are held.
  void HoldDue(Clock::time_point now);
  // A batch read back from a spill file goes out with this round's.
  void Sending(const OutBatch& batch);
  // The round's sends were answered (or failed): nothing in flight.
  void Sent() { sending_.clear(); }
  // Redis took `batch`; `lag`: its stream's lag as the reply said.
  void Confirmed(const OutBatch& batch, std::optional<uint64_t> lag);
  // Not taken (refused, unconfirmed, or over the lag limit): held.
  void Hold(OutBatch batch);
  // Every held batch, to spill to disk (they stay queued).
  std::map<uint32_t, std::deque<OutBatch>> TakeHeld();
  // URLs in spill files taken back after a crash: queued.
  void Requeued(uint64_t urls) { queued_urls_ += urls; }

  // Batches `shard` may get before its lag reaches max_lag_batches.
  uint64_t Room(uint32_t shard) const;
  // Batches a spill file of `shard` may give now: none while it has batches
  // held in RAM (older ones go first), else its room up to 64.
  uint64_t SpillRoom(uint32_t shard) const;
  void SetLag(uint32_t shard, uint64_t lag) { lag_[shard] = lag; }
  std::vector<uint32_t> HeldShards() const;
  // Every URL in RAM not yet confirmed, as wire lines (outbox.txt).
  void AppendCut(std::string* text) const;

  uint64_t queued_urls() const { return queued_urls_; }
  uint64_t held_urls() const { return held_urls_; }

 private:
  // Full batches, and those batch_ms old (all with `flush_all`).
  std::vector<OutBatch> TakeNew(bool flush_all, Clock::time_point now);

  const uint32_t batch_urls_;
  const std::chrono::milliseconds batch_ms_;
  const uint64_t max_lag_;
  std::map<uint32_t, OutBatch> filling_;           // by shard
  std::vector<OutBatch> full_;                     // batch_urls reached: to send
  std::vector<OutBatch> sending_;                  // in flight, unconfirmed
  std::map<uint32_t, std::deque<OutBatch>> held_;  // over the lag limit
  uint64_t held_urls_ = 0;
  uint64_t queued_urls_ = 0;
  std::vector<uint64_t> lag_;  // by shard: the last lag seen, plus batches sent since
};

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_OUTBOX_H_
