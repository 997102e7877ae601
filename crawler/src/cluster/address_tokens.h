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
// The key expires once the address is idle.
//
// No worker waits on Redis for a turn (before, each request cost its
// worker thread a round trip, and a Redis slow to answer stalled every
// worker by that much). A worker's Start answers from what is here: a
// turn granted for the address and not yet taken, or "wait". Asked for
// an address with nothing granted, Start queues the question and says
// wait a round trip (the node's last one, 1 ms at least, 100 ms at
// most); the node's turn threads send the questions queued, one EVAL
// each, in one pipeline (4 threads, each on a connection: questions that
// come during a round trip go at once on another), and keep what Redis
// grants for the next Start there. One question out per asker (a lease: its worker asks
// again each round, every ms or so, until it has its answer), so an address with many
// hosts waiting gets as many questions in one round trip.
// A turn granted is taken within the claim (Limits::claim_ms) or given back: Redis,
// granting it, moves the address's next start the claim further (delay + the claim, when
// min_delay_ip_s is not 0), so a request started any time in the claim
// still comes min_delay_ip_s before the next node's. The claim grows to
// 3 round trips when Redis is slow (Claim). The claim is
// counted from when the question was sent, before Redis's clock granted
// it, so it is never longer here than there.
//
// While Redis cannot be asked (down, cut off, an error reply), turns are
// granted here without it (counted as `local`, logged once every 30 s):
// each node stays polite on its own, as it was without this part, and the
// crawl goes on; the job's combined limit holds again once Redis answers
// (logged too, with the turns taken alone: none is taken alone after it).
// A connection that failed is tried again after 1 s, not before, with a
// connect and command timeout of cluster.turn_timeout_s (2 s by default).
// A question whose reply was lost (the script
// may have run) is given back as an end.
//
// A turn's end is no round trip of its own either: it waits for a turn
// thread's next pipeline (with the next question, or on its own within
// 5 ms, kTick) or the exchange thread's Settle. So does a turn's taking.
// A later end only holds the turn longer (more polite, never less). An end
// that could not reach Redis waits so too, until a round trip works: left
// to lapse, it held its address against every node for fetch.timeout_s +
// connect_timeout_s + 10 s (a 2 s cut of one node's Redis stalled a
// three-node crawl ~80 s). At most kMaxEnds wait; more lapse.
//
// Thread-safe: any thread may Start and End; the turn threads and Settle
// each use a connection of the pool.
#ifndef CRAWLER_CLUSTER_ADDRESS_TOKENS_H_
#define CRAWLER_CLUSTER_ADDRESS_TOKENS_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "cluster/redis/log_every.h"
#include "cluster/redis/redis.h"
#include "engine/placement.h"

namespace crawler::cluster {

class AddressTokens {
 public:
  struct Limits {
    uint32_t delay_ms = 0;     // min_delay_ip_s
    uint32_t connections = 1;  // max_connections_per_ip
    uint32_t lapse_ms = 0;     // a turn not given back lapses after this
    // A turn granted is taken within this or given back. A worker comes
    // back for it after the round trip it was told to wait, unless it is
    // parsing a page (tens of ms for a big one).
    uint32_t claim_ms = 100;
  };
  // `address`: Redis (its WAIT is not used: a turn lost in a failover
  // costs one early start, not work). `prefix`: "crawler:{JOB}:".
  // `process`: this process's token, in its liveness key (membership.h).
  // `timeout_s`: the connect and command timeout (cluster.turn_timeout_s).
  AddressTokens(RedisAddress address, std::string prefix, std::string node,
                std::string process, Limits limits, double timeout_s = 2.0);
  ~AddressTokens();
  AddressTokens(const AddressTokens&) = delete;
  AddressTokens& operator=(const AddressTokens&) = delete;

  // No round trip: a turn granted here for `address`, or how long to wait
  // (pending: a question is out for `who`, queued for the turn threads if
  // it was not; placement.h, AddressTurns::StartAt).
  engine::AddressTurn Start(std::string_view address, uint64_t who = 0) EXCLUDES(mu_);
  // No round trip: the end waits for the next one.
  void End(std::string_view address, uint64_t token) EXCLUDES(mu_);
  // The exchange thread's, each round, and the last word: sends the ends
  // waiting, if Redis may be asked (cheap otherwise).
  void Settle() EXCLUDES(mu_);

  struct Figures {
    uint64_t granted = 0;  // turns Redis gave
    uint64_t waits = 0;    // asks Redis answered "wait"
    uint64_t local = 0;    // turns granted without Redis (it could not be asked)
    uint64_t unused = 0;   // turns granted and given back untaken (the claim)
  };
  Figures figures() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Grant {
    uint64_t token = 0;
    Clock::time_point until;  // taken by then, or given back
  };
  // An address asked about: what Redis granted, its last "wait", a
  // question queued or in flight. Dropped once none of these holds.
  struct Asked {
    std::deque<Grant> granted;
    Clock::time_point wait_until{};
    std::vector<uint64_t> asking;  // whose questions are out
  };
  struct Question {
    std::string address;
    uint64_t token = 0;
    uint64_t who = 0;
    uint32_t claim_ms = 0;  // Claim(), when it was asked
  };
  // The claim of a turn asked now: Limits::claim_ms, or 3 round trips
  // when that is longer (at most the timeout). A grant reaches this node a
  // round trip after it was asked, and its claim counts from then: with
  // Redis's AOF fsync stalling on a busy disk (round trips of 300 ms), a
  // fixed 100 ms claim had lapsed before its grant arrived, and most
  // turns went unused.
  uint32_t Claim() const REQUIRES(mu_);
  // An idle connection of the pool, or a new one; null while Redis is
  // given up on (after a failure, for a second) or cannot be reached.
  std::unique_ptr<Redis> Take() EXCLUDES(mu_);
  void Put(std::unique_ptr<Redis> redis) EXCLUDES(mu_);
  // A round trip failed: the pool is dropped, Redis not asked for a second.
  // `took`: how long the failed step waited (logged: a timeout or not).
  void Failed(const std::string& why, Clock::duration took) EXCLUDES(mu_);
  // A round trip worked: after a failure, turns are Redis's again (logged,
  // with the count of turns taken alone).
  void Back() EXCLUDES(mu_);
  // One pipeline: the ends waiting, then `starts`, whose replies go to
  // `replies`. False (`why` says why; the ends wait again, sending one
  // twice is harmless) if the round trip or a reply failed.
  bool Send(Redis& redis, std::vector<std::vector<std::string>> starts,
            std::vector<RedisReply>* replies, std::string* why) EXCLUDES(mu_);
  void KeepEnds(std::vector<std::vector<std::string>> ends) EXCLUDES(mu_);
  std::vector<std::string> StartCommand(const Question& q) const;
  std::vector<std::string> EndCommand(std::string key, std::string token) const;
  std::string Key(std::string_view address) const;
  // A turn's field in its address's hash: "NODE:PROCESS:TOKEN".
  std::string Token(uint64_t token) const;
  // A turn thread: sends the questions and ends queued, keeps the
  // answers, gives back the turns not taken in their claim.
  void Loop(size_t index) EXCLUDES(mu_);
  // One round: false if there was nothing to send.
  void Ask(std::vector<Question> questions) EXCLUDES(mu_);
  // `q`'s asker has its answer: its address's entry.
  Asked& Answered(const Question& q) REQUIRES(mu_);
  // Grants past their claim become ends; idle addresses are dropped.
  void Sweep(Clock::time_point now) REQUIRES(mu_);

  const RedisAddress address_;
  const std::string prefix_, node_, process_;
  const Limits limits_;
  const double timeout_s_;
  std::atomic<uint64_t> next_token_{1};
  std::atomic<uint64_t> granted_{0}, waits_{0}, local_{0}, unused_{0};
  mutable Mutex mu_;
  std::vector<std::unique_ptr<Redis>> idle_ GUARDED_BY(mu_);
  // The commands waiting for a round trip: ends (EndCommand) and turns
  // taken (turn_taken.lua).
  std::vector<std::vector<std::string>> ends_ GUARDED_BY(mu_);
  Clock::time_point retry_at_ GUARDED_BY(mu_){};
  bool alone_ GUARDED_BY(mu_) = false;  // given up on Redis, not yet back
  LogEvery log_ GUARDED_BY(mu_){std::chrono::seconds(30)};
  std::unordered_map<std::string, Asked> asked_ GUARDED_BY(mu_);
  std::vector<Question> questions_ GUARDED_BY(mu_);
  // The last round trip's time (what a worker is told to wait for an answer).
  Clock::duration round_trip_ GUARDED_BY(mu_){std::chrono::milliseconds(1)};
  // The round trips' recent peak, for Claim: up at once, down by an
  // eighth of the gap at each answer.
  Clock::duration slow_trip_ GUARDED_BY(mu_){std::chrono::milliseconds(1)};
  bool stop_ GUARDED_BY(mu_) = false;
  Clock::time_point next_sweep_ GUARDED_BY(mu_){};
  std::condition_variable_any cv_;
  std::vector<std::thread> threads_;  // last: started once the rest is built
};

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_ADDRESS_TOKENS_H_
