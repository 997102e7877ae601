// When a cluster node reads its shards' streams (cluster.h, Exchange): a
// send rings the doorbell of its shard's lease holder (kSendScript: a
// counter in Redis), and a node reads its streams when the bell rang since
// its last read. Pure logic, no Redis: the exchange thread looks at the bell
// (one GET) when Before says kLook, and reads when it says kRead or the look
// saw the bell rang. Unit-tested without Redis (cluster_parts_test.cc).
//
// It reads anyway:
// - at the first round, after a reconnect or a failed read (Force);
// - while the last read took entries (it may have stopped at its COUNT,
//   and the rest rings no bell);
// - when the shards read or their epochs changed (a lease taken, lapsed or
//   renewed: entries sent while a lease was free rang no bell);
// - and at least every `full_every`, in case.
// An idle node looks at its bell less and less often, from 5 ms doubling up
// to `cap`.
#ifndef CRAWLER_CLUSTER_DOORBELL_H_
#define CRAWLER_CLUSTER_DOORBELL_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace crawler::cluster {

class Doorbell {
 public:
  using Clock = std::chrono::steady_clock;
  using Shards = std::vector<std::pair<uint32_t, uint64_t>>;  // shard, epoch
  enum class Next : uint8_t { kRead, kLook, kSkip };

  Doorbell(std::chrono::milliseconds cap, std::chrono::milliseconds full_every)
      : cap_(cap), full_every_(full_every) {}

  // Before reading `shards` at `now`: read, look at the bell first, or not
  // this round (an idle node's next look is not due).
  Next Before(Shards shards, Clock::time_point now) {
    if (force_ || shards != shards_ || now - full_ >= full_every_) {
      shards_ = std::move(shards);
      full_ = now;
      wait_ = std::chrono::milliseconds(0);
      return Next::kRead;
    }
    return now < next_ ? Next::kSkip : Next::kLook;
  }
  // A look saw `value` (the bell's, "0" if none) at `now`: true if it rang
  // since the last read (read now); else the next look waits longer.
  bool Looked(const std::string& value, Clock::time_point now) {
    if (value != seen_) {
      wait_ = std::chrono::milliseconds(0);
      return true;
    }
    wait_ = std::min(cap_, std::max(wait_ * 2, std::chrono::milliseconds(5)));
    next_ = now + wait_;
    return false;
  }
  // A read returned the bell's `value` (read in the same script) and took
  // `entries`.
  void Read(const std::string& value, size_t entries) {
    seen_ = value;
    force_ = entries > 0;
  }
  // Read at the next round whatever the bell says.
  void Force() { force_ = true; }

 private:
  const std::chrono::milliseconds cap_, full_every_;
  std::string seen_;   // the bell's value at the last read
  bool force_ = true;  // read at the next round
  Shards shards_;      // read last, with their epochs
  Clock::time_point full_{}, next_{};
  std::chrono::milliseconds wait_{0};  // between looks, while idle
};

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_DOORBELL_H_
