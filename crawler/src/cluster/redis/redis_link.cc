// See redis_link.h.
#include "cluster/redis/redis_link.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

namespace crawler::cluster {

void RedisLink::Lost(Clock::time_point now) {
  redis_.reset();
  down_since_ = now;
}

Status RedisLink::Reconnect() {
  auto r = Redis::Connect(address_, 2);
  if (!r.ok()) return r.status();
  redis_ = std::move(r).value();
  return Status::Ok();
}

double RedisLink::down_s(Clock::time_point now) const {
  return up() ? 0 : std::chrono::duration<double>(now - down_since_).count();
}

bool RedisLink::Failed(const RedisReply& r, const char* what) {
  if (!r.IsError()) return false;
  const std::string why = RefusalOf(r.Str());
  if (!address_.master.empty() && r.Str().rfind("READONLY", 0) == 0) {
    // Behind Sentinel a primary turned replica is left: the reconnect asks
    // the sentinels where the primary is now.
    spdlog::warn("redis: {}: {} is a replica now; asking the sentinels for the primary",
                 what, redis_ ? redis_->address().Text() : address_.Text());
    return true;
  }
  if (why.empty())
    spdlog::warn("redis: {}: {}", what, r.Str());
  else
    refusal_ = std::string(what) + " refused: Redis is " + why;
  return true;
}

bool RedisLink::TakeRefusal(Clock::time_point now) {
  refusal_.clear();
  return refusal_log_.Due(now);
}

Status RedisLink::Retry(const std::atomic<bool>& stop, const char* what,
                        const std::function<bool()>& step,
                        const std::function<void()>& reconnected) {
  auto backoff = std::chrono::milliseconds(100);
  for (;;) {
    if (up() && step()) return Status::Ok();
    if (stop.load())
      return Status::Error(Status::Code::kIoError,
                           std::string("cluster: stopped while ") + what);
    if (up()) {
      spdlog::warn("redis: {} failed; reconnecting", what);
      Lost(Clock::now());
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
    Status st = Reconnect();
    if (st.ok()) {
      reconnected();
    } else {
      spdlog::warn("redis: down {:.0f} s ({}); retrying", down_s(Clock::now()),
                   st.message());
    }
  }
}

}  // namespace crawler::cluster
