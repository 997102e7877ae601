// Worker: a cluster node's transfers of hosts whose shard lease lapsed
// (placement.h, Lapsed): abandoned in flight and asked again later.
#include <spdlog/spdlog.h>

#include <chrono>

#include "engine/worker.h"

namespace crawler::engine {

using frontier::Clock;

// A transfer given up in flight because its host's shard lease lapsed
// (AbandonLapsed): asked again a little later, as if never started.
Status Worker::Abandoned(const Completed& c) {
  GateUnit unit(p_.gate);
  const auto again = Clock::now() + std::chrono::milliseconds(200);
  if (c.robots) {
    p_.hosts.SetRobotsInFlight(unit.pass(), c.host, false);
    robots_retry_.push_back({again, c.host, c.result.url, c.hops});
    return Status::Ok();  // still busy: the retry holds it
  }
  p_.hosts.Uncount(unit.pass(), c.lease.host);
  p_.frontier.Defer(c.lease, again);
  p_.state.started.fetch_sub(1);
  p_.state.busy.fetch_sub(1);
  return Status::Ok();
}

void Worker::AbandonLapsed() {
  auto now = Clock::now();
  if (p_.placement == nullptr || now < next_lapse_check_) return;
  next_lapse_check_ = now + std::chrono::milliseconds(50);
  size_t n = fetcher_->Abandon([this](const std::string& url) {
    return p_.placement->Lapsed(frontier::HostKey(url));
  });
  if (n > 0)
    spdlog::info("cluster: {} fetches abandoned: their shards' leases lapsed", n);
}

}  // namespace crawler::engine
