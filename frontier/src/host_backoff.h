// One host's back-off state (FrontierOptions: backoff_*, park_*): the
// 429/503 slow-down and the run of connection failures that parks it. A
// value inside the frontier's per-host record, guarded by the frontier's
// mutex; pure arithmetic, no clock.
#ifndef FRONTIER_HOST_BACKOFF_H_
#define FRONTIER_HOST_BACKOFF_H_

#include <algorithm>
#include <cstdint>

#include "frontier/frontier.h"

namespace crawler::frontier {

struct HostBackoff {
  double slow_s = 0;             // the 429/503 slow-down (0: none)
  uint32_t unreachable_run = 0;  // connection failures in a row

  // A fetch ended with `signal`; `usual_s` is the host's delay without any
  // back-off.
  void On(HostSignal signal, double usual_s, const FrontierOptions& o) {
    switch (signal) {
      case HostSignal::kOverloaded:
        slow_s = std::min(o.backoff_max_s,
                          std::max({2 * slow_s, 2 * usual_s, o.backoff_min_s}));
        unreachable_run = 0;
        break;
      case HostSignal::kAnswered:
        slow_s /= 2;
        if (slow_s < o.backoff_min_s) slow_s = 0;
        unreachable_run = 0;
        break;
      case HostSignal::kUnreachable:
        ++unreachable_run;
        break;
      case HostSignal::kNone:
      case HostSignal::kUnresolved:
        break;
    }
  }
  bool Parked(const FrontierOptions& o) const {
    return o.park_after > 0 && o.park_s > 0 && unreachable_run >= o.park_after;
  }
  // The wait after a fetch whose usual delay is `usual_s`.
  double Wait(double usual_s, const FrontierOptions& o) const {
    double wait = std::max(usual_s, slow_s);
    return Parked(o) ? std::max(wait, o.park_s) : wait;
  }
};

}  // namespace crawler::frontier

#endif  // FRONTIER_HOST_BACKOFF_H_
