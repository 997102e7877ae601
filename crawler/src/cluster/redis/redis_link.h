// The exchange thread's connection to Redis (cluster.h, "Redis lost
// mid-crawl"): the connection while it is up, its
// loss and the time since, reconnecting, and what an error reply means.
// A reply that is an error fails the round either way, but differently:
// - a refusal (RefusalOf: Redis full, a replica, unable to persist) is kept
//   for the round (refusal()): the caller waits it out with back-off and
//   keeps the connection, since a reconnect would meet the same refusal at
//   once (three nodes on a full Redis once sent it 6.5 million OOM replies
//   in 7 minutes that way);
// - another error is logged with what was asked, and the round fails like
//   a lost connection.
// Its log: "redis: down N s (why); retrying" while down; a refusal's line
// first, then once every 30 s at most (a Redis at its limit flaps).
//
// Not thread-safe: the exchange thread's (Start's, before it). Unit-tested
// against a real redis-server (cluster_redis_link_test.cc).
#ifndef CRAWLER_CLUSTER_REDIS_LINK_H_
#define CRAWLER_CLUSTER_REDIS_LINK_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "cluster/redis/log_every.h"
#include "cluster/redis/redis.h"

namespace crawler::cluster {

class RedisLink {
 public:
  using Clock = std::chrono::steady_clock;
  // `joined`: the connection the join made (null: down from the start).
  RedisLink(RedisAddress address, std::unique_ptr<Redis> joined)
      : address_(std::move(address)), redis_(std::move(joined)) {}

  bool up() const { return redis_ != nullptr; }
  // The connection; only while up().
  Redis& operator*() const { return *redis_; }
  Redis* operator->() const { return redis_.get(); }
  const RedisAddress& address() const { return address_; }

  // The connection broke (or a reply failed the round): it is dropped, and
  // Redis counts as down from `now`.
  void Lost(Clock::time_point now);
  // Connects again (a 2 s timeout). Errors: the connect's (kIoError).
  Status Reconnect();
  // Seconds since Lost (0 while up).
  double down_s(Clock::time_point now) const;

  // True if `r` is an error reply (of `what`, for the log): see above.
  bool Failed(const RedisReply& r, const char* what);
  // The refusal this round met ("" if none).
  const std::string& refusal() const { return refusal_; }
  // Clears it; true when it is to be logged at `now` (the first, then once
  // every 30 s).
  bool TakeRefusal(Clock::time_point now);

  // Runs `step` until it returns true, reconnecting with back-off (100 ms
  // doubling to 2 s; `reconnected` after each new connection) and logging
  // why. Errors: `stop` was set first (kIoError, naming `what`).
  Status Retry(const std::atomic<bool>& stop, const char* what,
               const std::function<bool()>& step,
               const std::function<void()>& reconnected);

 private:
  const RedisAddress address_;
  std::unique_ptr<Redis> redis_;
  Clock::time_point down_since_{};
  std::string refusal_;
  LogEvery refusal_log_{std::chrono::seconds(30)};
};

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_REDIS_LINK_H_
