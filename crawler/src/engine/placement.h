// Room engine/ (docs/architecture.md): where a host lives, as the workers see
// it, kept to an interface so the engine does not depend on Redis. This and crawl/node.h
// are the only way the engine reaches a multi-machine crawl: no engine file includes a
// cluster header, and only the cluster's own CMake target (crawler/src/cluster/) links
// hiredis.
//
// A single-machine crawl has no Placement (a null pointer: every host is this
// machine's). A node of a multi-machine job is one: its hosts are split into
// shards, each shard owned by one node at a time, and a worker
//  - admits a link only if this node owns its host (Owns), and Ships the
//    others to their owners;
//  - admits what other nodes shipped here (TakeInbox, then Admitted);
//  - fetches a host only while Fetchable (its shard's lease is held);
//  - restores shards taken over from a dead or leaving node (TakeShardState,
//    then ShardsLoaded), their URL history with them ([recrawl]);
//  - drains and drops shards handed over to another node (HandoffWork:
//    Draining/Drained, TakeReleased/Dropped);
//  - starts a request at an address only with the job's turn there
//    (AddressTurns: StartAt, then EndAt);
//  - ends only when the whole job is Done.
// The calls are made inside a gate pass (gate.h), from any worker thread: an
// implementation is thread-safe and takes only its own locks.
#ifndef CRAWLER_ENGINE_PLACEMENT_H_
#define CRAWLER_ENGINE_PLACEMENT_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/host_table.h"
#include "frontier/frontier.h"
#include "frontier/image.h"
#include "output/history.h"
#include "output/seen_log.h"

namespace crawler::engine {

// Shards whose state this node takes on: their part of a checkpoint (another
// node's for a takeover, this node's own for a resume).
struct ShardState {
  std::vector<uint32_t> shards;
  std::string from;       // "node N checkpoint Q", for the log
  bool own = false;       // this node's own checkpoint (a resume), not a takeover
  uint64_t sequence = 0;  // the checkpoint's sequence
  frontier::FrontierImage frontier;
  std::vector<HostSnapshot> hosts;
  // A takeover's: the source checkpoint's domain budgets, all of them (a
  // domain spans shards), merged into this node's (HostTable::RestoreDomains).
  std::vector<DomainSnapshot> domains;
  std::vector<output::SeenRecord> seen;
  std::vector<frontier::UrlEntry> outbox;  // the source node's, to send again
  // [recrawl]: the shards' URL history records (a takeover's, from the source
  // checkpoint's history/; a resume's own records are in the live history
  // already, restored whole by --resume).
  output::History::Records history;
};

// The interface is split by what calls it: routing (admission, fetch,
// robots.txt, sitemaps, the history's moves), arrivals (the inbox; the
// worker's loop), shard moves (takeover, resume and handoff, the worker's
// loop), turns at addresses (each request's start and end), and the end of
// the job. A Placement is all five; a caller names the part it uses.

// Where a host lives now.
class Routing {
 public:
  virtual ~Routing() = default;
  // Does this node own `url`'s host now? The shard of a host key
  // (frontier::HostKey). May this node fetch `host_key`'s URLs now?
  virtual bool Owns(std::string_view url) const = 0;
  virtual uint32_t ShardOf(std::string_view host_key) const = 0;
  virtual bool Fetchable(std::string_view host_key) const = 0;
  // This node held the host's shard and its lease lapsed by this node's own
  // clock (not renewed for cluster.lease_s: it was paused or cut off from
  // Redis): nothing of the host is fetched, robots.txt included, and what is
  // in flight is abandoned, until the lease is renewed (or, lost, the node
  // stops). A shard being handed over is not Fetchable but not Lapsed: its
  // fetches in flight end (the drain); a robots.txt fetch not started yet
  // (a retry waiting out its back-off) waits and goes with the shard.
  virtual bool Lapsed(std::string_view host_key) const = 0;
  // Is `url`'s shard being handed over (its URLs go to its new owner)? A
  // host key is a URL too.
  virtual bool Handing(std::string_view url) const = 0;
  // Did this node hand `host_key`'s shard over (and not take it back)? A
  // URL of it still queued here (a retry waiting out its back-off as the
  // handoff ended) is its new owner's: shipped, not deferred forever.
  virtual bool GivenAway(std::string_view host_key) const = 0;
  // Queues URLs for their owners (none of them this node's).
  virtual void Ship(const std::vector<frontier::UrlEntry>& entries) = 0;
};

// What other nodes sent here: to admit now (the inbox is emptied), then
// Admitted once they are in the frontier (until then the node is busy).
class Arrivals {
 public:
  virtual ~Arrivals() = default;
  virtual bool InboxEmpty() const = 0;
  virtual std::vector<frontier::UrlEntry> TakeInbox() = 0;
  virtual void Admitted() = 0;
};

// Shards arriving and leaving.
class ShardMoves {
 public:
  virtual ~ShardMoves() = default;
  // Takeover and resume: shards to restore into this node's frontier, host
  // table and filter, then ShardsLoaded (they are owned from then on).
  virtual std::optional<ShardState> TakeShardState() = 0;
  virtual void ShardsLoaded(const std::vector<uint32_t>& shards) = 0;
  // Handoff: is any shard being handed over? Shards to drain (no fetch of
  // their hosts in flight), reported Drained; shards given up, whose queued
  // URLs are dropped here, reported Dropped.
  virtual bool HandoffWork() const = 0;
  virtual std::vector<uint32_t> Draining() = 0;
  virtual void Drained(const std::vector<uint32_t>& shards) = 0;
  virtual std::vector<uint32_t> TakeReleased() = 0;
  virtual void Dropped(const std::vector<uint32_t>& shards, uint64_t urls) = 0;
};

// Politeness per address over the whole job: hosts on one address may be
// held by different nodes, each polite on its own and together not. A
// request at an address (the frontier's own limits passed) starts only
// with a turn, counted over every node; End gives it back when the request
// ended. Asking costs no round trip: a turn not at hand is asked for
// meanwhile (`pending`), and the caller asks again a little later.
struct AddressTurn {
  bool granted = false;
  uint64_t token = 0;  // granted: for End
  // Not granted: being asked for; ask again after `wait` (a round trip).
  bool pending = false;
  // Not granted: ask again after this long (the address's next start, or
  // a connection of it coming free, or pending: the answer).
  std::chrono::milliseconds wait{0};
};
class AddressTurns {
 public:
  virtual ~AddressTurns() = default;
  // `who`: the asker (a lease's id), asking again while its question is
  // out; 0: anyone (asks only if no question for the address is out).
  virtual AddressTurn StartAt(std::string_view address, uint64_t who) = 0;
  virtual void EndAt(std::string_view address, uint64_t token) = 0;
};

// What the workers hold: the four parts, and the job's end.
class Placement : public Routing,
                  public Arrivals,
                  public ShardMoves,
                  public AddressTurns {
 public:
  // The whole job is over (every node idle, everything sent applied).
  virtual bool Done() const = 0;
};

}  // namespace crawler::engine

#endif  // CRAWLER_ENGINE_PLACEMENT_H_
