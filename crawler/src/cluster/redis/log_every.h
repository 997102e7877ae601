// A log line that repeats at most once per period: the first one, then
// one per `period` at most (a Redis at its limit flaps, and a line per
// refusal would flood the log). Pure logic; tested through RefusalBackoff's and
// RedisLink's unit cases (cluster_sender_test.cc, cluster_redis_link_test.cc).
#ifndef CRAWLER_CLUSTER_LOG_EVERY_H_
#define CRAWLER_CLUSTER_LOG_EVERY_H_

#include <chrono>

namespace crawler::cluster {

class LogEvery {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LogEvery(Clock::duration period) : period_(period) {}
  // Is the line to be logged at `now`? If so, it counts as logged.
  bool Due(Clock::time_point now) {
    if (last_ != Clock::time_point{} && now - last_ <= period_) return false;
    last_ = now;
    return true;
  }

 private:
  const Clock::duration period_;
  Clock::time_point last_{};
};

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_LOG_EVERY_H_
