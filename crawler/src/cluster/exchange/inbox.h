// The inbox of a cluster node (cluster.h, Exchange): the URLs read from its
// shards' streams, for the workers to admit, and the ledger of the stream
// entries they came in, acknowledged (and so trimmed) only once a checkpoint
// that holds their effect is committed and is the older of the two on disk.
// Pure logic, no Redis: the exchange thread adds what it read (Add), the
// workers take the URLs (Take, Admitted), the checkpoint hooks move the
// entries along (Cut, Committed), and the exchange thread sends the acks
// (TakeAcks, Retry). Not thread-safe: the Cluster guards it with its mutex.
// Unit-tested without Redis (cluster_inbox_test.cc).
//
// An entry goes: received (its URLs in the inbox) -> applied (taken by a
// worker: its URLs are in the frontier, or being admitted) -> cut (in
// checkpoint N) -> to acknowledge (a later checkpoint is committed, so
// checkpoint.prev/ holds N: a resume that finds checkpoint/ damaged falls
// back to it, and it must hold every entry Redis no longer keeps) ->
// acknowledged. At the job's end, when nothing will be resumed,
// a commit acknowledges its own cut too.
#ifndef CRAWLER_CLUSTER_INBOX_H_
#define CRAWLER_CLUSTER_INBOX_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "frontier/frontier.h"

namespace crawler::cluster {

// One entry of a shard's stream, by its ID.
struct StreamEntry {
  uint32_t shard = 0;
  std::string id;
};

class Inbox {
 public:
  // Entries read (or claimed), with the URLs they hold.
  void Add(std::vector<frontier::UrlEntry> urls, std::vector<StreamEntry> entries);
  // The URLs to admit now (the inbox is emptied): their entries are applied,
  // in the next cut. Admitted when they are in the frontier.
  std::vector<frontier::UrlEntry> Take();
  void Admitted() { --admitting_; }
  // Nothing received and not taken.
  bool Empty() const { return urls_.empty() && received_.empty(); }
  // Nor being admitted.
  bool Quiet() const { return Empty() && admitting_ == 0; }

  // Checkpoint `sequence` is cut (the gate closed): it holds every entry
  // applied so far.
  void Cut(uint64_t sequence);
  // Checkpoint `sequence` is committed: the cuts up to the commit before it
  // may be acknowledged; with `last` (the job is done), up to it.
  void Committed(uint64_t sequence, bool last);
  uint64_t committed() const { return committed_; }
  // Entries to acknowledge now; those not acknowledged go back (Retry).
  std::vector<StreamEntry> TakeAcks();
  void Retry(std::vector<StreamEntry> entries);
  // Applied entries not acknowledged yet, that only a checkpoint (or two)
  // will free (a full Redis wants one: Cluster::CheckpointWanted).
  bool AwaitingCut() const;

 private:
  std::vector<frontier::UrlEntry> urls_;
  std::vector<StreamEntry> received_;  // their URLs in urls_
  uint32_t admitting_ = 0;
  std::vector<StreamEntry> applied_;                  // taken, not yet cut
  std::map<uint64_t, std::vector<StreamEntry>> cut_;  // by sequence
  std::vector<StreamEntry> to_ack_;                   // committed
  uint64_t committed_ = 0;
};

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_INBOX_H_
