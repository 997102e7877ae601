// The pause after Redis refused a write (full, a replica, cannot persist:
// RefusalOf): 100 ms after the first refusal, doubling to 2 s while
// refusals go on, until one is taken again. Its log: the first refusal,
// then one every 30 s at most (a Redis at its limit flaps). The sender
// pauses its sends by it (one batch at a time, a probe, until one is
// taken), the receiver the streams it could not make (receiver.h). Pure
// logic; unit-tested in cluster_sender_test.cc.
#ifndef CRAWLER_CLUSTER_REFUSAL_BACKOFF_H_
#define CRAWLER_CLUSTER_REFUSAL_BACKOFF_H_

#include <algorithm>
#include <chrono>
#include <optional>

#include "cluster/redis/log_every.h"

namespace crawler::cluster {

class RefusalBackoff {
 public:
  using Clock = std::chrono::steady_clock;
  bool refusing() const { return refusing_; }
  // The refused writes wait at `now` (refusing, and the pause not over).
  bool Paused(Clock::time_point now) const { return refusing_ && now < paused_until_; }
  // A write was refused at `now`: pauses. True when to log it.
  bool Refused(Clock::time_point now) {
    if (!refusing_) {
      refusing_ = true;
      since_ = now;
      pause_ = std::chrono::milliseconds(100);
    }
    paused_until_ = now + pause_;
    pause_ = std::min(pause_ * 2, std::chrono::milliseconds(2000));
    return log_.Due(now);
  }
  // A write was taken at `now`: the refusals' length in seconds, if they were.
  std::optional<double> Accepted(Clock::time_point now) {
    if (!refusing_) return std::nullopt;
    refusing_ = false;
    return std::chrono::duration<double>(now - since_).count();
  }
  std::chrono::milliseconds pause() const { return pause_; }

 private:
  bool refusing_ = false;
  Clock::time_point since_{}, paused_until_{};
  std::chrono::milliseconds pause_{100};
  LogEvery log_{std::chrono::seconds(30)};
};

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_REFUSAL_BACKOFF_H_
