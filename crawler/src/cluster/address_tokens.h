// Politeness per address across the nodes of a job (placement.h,
// AddressTurns). Placement is by host, so hosts on one address (shared
// hosting) can live on several nodes, each polite on its own and together
// not. Every request at an address takes a turn from Redis first, counted
// over the whole job by the rules each frontier keeps on its own
// (frontier.h, FrontierOptions): request starts min_delay_ip_s apart and
// each min_delay_ip_s after the last one there ended, at most
// max_connections_per_ip at once.
//
// One hash per address, "crawler:{JOB}:ip:ADDRESS": `next`, the next start
// allowed (ms, Redis's clock: TIME, so the nodes' clocks do not matter),
// and one field per turn in progress, "NODE:PROCESS:N", whose value is when
// it lapses (fetch.timeout_s + connect_timeout_s + 10 s). A turn of a
// process that is gone ends sooner: when NODE's liveness key
// ("crawler:{JOB}:alive:NODE", 3 heartbeats) no longer holds PROCESS, its
// token, the next start there drops it (before, a node killed mid-request
// held its turns the whole lapse, 80 s by default, against every node).
// Taking a turn is one EVALSHA, giving it back another, both in one round
// trip a request (below; docs/cluster.md, "Politeness per address": the
// cost measured).
// The key expires once the address is idle.
//
// While Redis cannot be asked (down, cut off, an error reply), turns are
// granted here without it (counted as `local`, logged once every 30 s):
// each node stays polite on its own, as it was without this part, and the
// crawl goes on; the job's combined limit holds again once Redis answers.
// A connection that failed is tried again after 1 s, not before (a worker
// thread asks: it must not wait on a dead connection each request), with
// a command timeout of 0.5 s.
//
// A turn's end is not a round trip of its own: it waits for the next one,
// a start's (the same pipeline: one round trip a request, not two) or the
// exchange thread's (Settle, each round: cluster.batch_ms / 2 apart, 10 ms
// by default, when the exchange is idle).
// A later end only holds the turn longer (more polite, never less). An end
// that could not reach Redis (or a start whose reply was lost: the script
// may have run) waits so too, until a round trip works: left to lapse, it
// held its address against every node for fetch.timeout_s +
// connect_timeout_s + 10 s (a 2 s cut of one node's Redis stalled a
// three-node crawl ~80 s). At most kMaxEnds wait; more lapse.
//
// Thread-safe: the worker threads ask, each on a connection of the pool
// (one per thread asking at once), so their round trips overlap and Redis
// fsyncs their writes together (docs/cluster.md: one connection under a
// lock gave 1,411 turns/s from 4 threads).
#ifndef CRAWLER_CLUSTER_ADDRESS_TOKENS_H_
#define CRAWLER_CLUSTER_ADDRESS_TOKENS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "cluster/redis/log_every.h"
#include "cluster/redis/redis.h"
#include "engine/placement.h"

namespace crawler::engine {

class AddressTokens {
 public:
  struct Limits {
    uint32_t delay_ms = 0;     // min_delay_ip_s
    uint32_t connections = 1;  // max_connections_per_ip
    uint32_t lapse_ms = 0;     // a turn not given back lapses after this
  };
  // `address`: Redis (its WAIT is not used: a turn lost in a failover
  // costs one early start, not work). `prefix`: "crawler:{JOB}:".
  // `process`: this process's token, in its liveness key (membership.h).
  AddressTokens(RedisAddress address, std::string prefix, std::string node,
                std::string process, Limits limits);
  ~AddressTokens();
  AddressTokens(const AddressTokens&) = delete;
  AddressTokens& operator=(const AddressTokens&) = delete;

  // One round trip: the ends waiting, then this start.
  AddressTurn Start(std::string_view address) EXCLUDES(mu_);
  // No round trip: the end waits for the next one.
  void End(std::string_view address, uint64_t token) EXCLUDES(mu_);
  // The exchange thread's, each round, and the last word: sends the ends
  // waiting, if Redis may be asked (cheap otherwise).
  void Settle() EXCLUDES(mu_);

  struct Figures {
    uint64_t granted = 0;  // turns Redis gave
    uint64_t waits = 0;    // asks Redis answered "wait"
    uint64_t local = 0;    // turns granted without Redis (it could not be asked)
  };
  Figures figures() const;

 private:
  using Clock = std::chrono::steady_clock;
  // An idle connection of the pool, or a new one; null while Redis is
  // given up on (after a failure, for a second) or cannot be reached.
  std::unique_ptr<Redis> Take() EXCLUDES(mu_);
  void Put(std::unique_ptr<Redis> redis) EXCLUDES(mu_);
  // A round trip failed: the pool is dropped, Redis not asked for a second.
  void Failed(const std::string& why) EXCLUDES(mu_);
  // One pipeline: the ends waiting, then `start` (if not empty), whose
  // reply goes to `reply` (null without a start). False (`why` says why; the ends wait
  // again, sending one twice is harmless) if the round trip or a reply failed.
  bool Send(Redis& redis, std::vector<std::string> start, RedisReply* reply,
            std::string* why) EXCLUDES(mu_);
  void KeepEnds(std::vector<std::vector<std::string>> ends) EXCLUDES(mu_);
  std::vector<std::string> EndCommand(std::string key, std::string token) const;
  std::string Key(std::string_view address) const;
  // A turn's field in its address's hash: "NODE:PROCESS:TOKEN".
  std::string Token(uint64_t token) const;

  const RedisAddress address_;
  const std::string prefix_, node_, process_;
  const Limits limits_;
  std::atomic<uint64_t> next_token_{1};
  std::atomic<uint64_t> granted_{0}, waits_{0}, local_{0};
  mutable Mutex mu_;
  std::vector<std::unique_ptr<Redis>> idle_ GUARDED_BY(mu_);
  // The ends waiting for a round trip: their commands (EndCommand).
  std::vector<std::vector<std::string>> ends_ GUARDED_BY(mu_);
  Clock::time_point retry_at_ GUARDED_BY(mu_){};
  LogEvery log_ GUARDED_BY(mu_){std::chrono::seconds(30)};
};

}  // namespace crawler::engine

#endif  // CRAWLER_CLUSTER_ADDRESS_TOKENS_H_
