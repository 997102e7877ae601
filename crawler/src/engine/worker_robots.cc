// Worker: robots.txt fetches: started (and those due again), and a
// finished one's outcome (rules, redirects, sitemaps). Its failures (5xx, no
// answer) are RobotsFailed's, beside the page retries in worker.cc.
#include <algorithm>
#include <chrono>
#include <iterator>

#include "base/heap_bytes.h"
#include "engine/worker.h"

namespace crawler::engine {

using frontier::Clock;

void Worker::DropGivenAwayRobots() {
  const uint64_t drops = p_.state.shard_drops.load();
  if (drops == drops_seen_) return;
  drops_seen_ = drops;
  auto given_away = [this](const RobotsRetry& r) {
    if (MayStartRobots(r.host) != RobotsGo::kDrop) return false;
    p_.state.busy.fetch_sub(1);
    return true;
  };
  std::erase_if(robots_retry_, given_away);
  for (size_t n = robots_waiting_.size(); n > 0; --n) {
    RobotsRetry r = NextWaiting();
    if (!given_away(r)) WaitForRoom(std::move(r));
  }
}

void Worker::StartDueRobots(const Gate::Pass& pass) {
  DropGivenAwayRobots();
  if (robots_retry_.empty()) return;
  auto now = Clock::now();
  auto due = std::stable_partition(robots_retry_.begin(), robots_retry_.end(),
                                   [&](const RobotsRetry& r) { return r.at > now; });
  std::vector<RobotsRetry> start(std::make_move_iterator(due),
                                 std::make_move_iterator(robots_retry_.end()));
  robots_retry_.erase(due, robots_retry_.end());
  for (RobotsRetry& r : start) {
    if (Held(r)) continue;
    p_.state.busy.fetch_sub(1);  // StartRobots counts it again
    StartRobots(pass, r.host, r.url, r.hops);
  }
}

bool Worker::Held(RobotsRetry& r) {
  switch (MayStartRobots(r.host)) {
    case RobotsGo::kStart:
      return false;
    case RobotsGo::kWait:  // asked again later, like a retry
      RobotsLater(std::move(r), std::chrono::milliseconds(200));
      return true;
    case RobotsGo::kDrop:
      p_.state.busy.fetch_sub(1);
      return true;
  }
  return false;
}

void Worker::RobotsLater(RobotsRetry r, Clock::duration delay) {
  r.at = Clock::now() + delay;
  robots_retry_.push_back(std::move(r));
}

Worker::RobotsGo Worker::MayStartRobots(const std::string& host) const {
  if (p_.placement == nullptr) return RobotsGo::kStart;
  // Given away: the handoff's checkpoint holds the fetch under way, and the
  // new owner started it again. (A shard taken back is restored from a
  // checkpoint, which starts it again here: this copy must not.)
  if (p_.placement->GivenAway(host)) return RobotsGo::kDrop;
  // Lapsed: renewed, it is fetched; lost, this node stops and the new owner
  // fetches it. Handed over: not fetched here, so the drain does not wait
  // for it (a retry of a 5xx waits seconds).
  if (p_.placement->Lapsed(host) || p_.placement->Handing(host)) return RobotsGo::kWait;
  return RobotsGo::kStart;
}

// The fetch waits in robots_waiting_ until the fetcher has room
// (AddWaitingRobots). Started at once, every new host's robots.txt was a
// transfer: 100,000 seeds made 100,000 easy handles, 1.2 GB, and libcurl
// walks its list of waiting transfers at each one's end (68 pages/s at
// 100,000 hosts, scripts/bench-web.sh; perf and gdb).
void Worker::StartRobots(const Gate::Pass& pass, const std::string& host,
                         const std::string& url, int hops) {
  p_.state.busy.fetch_add(1);
  p_.hosts.RobotsStarted(pass, host, url, hops);
  WaitForRoom({Clock::time_point{}, host, url, hops});
}

namespace {
template <class Retry>
uint64_t HeapOf(const Retry& r) {
  return sizeof(Retry) + heap_bytes::Of(r.host) + heap_bytes::Of(r.url);
}
}  // namespace

void Worker::WaitForRoom(RobotsRetry r) {
  p_.state.robots_waiting_bytes.fetch_add(HeapOf(r), std::memory_order_relaxed);
  robots_waiting_.push_back(std::move(r));
}

Worker::RobotsRetry Worker::NextWaiting() {
  RobotsRetry r = std::move(robots_waiting_.front());
  robots_waiting_.pop_front();
  p_.state.robots_waiting_bytes.fetch_sub(HeapOf(r), std::memory_order_relaxed);
  return r;
}

// Starts waiting robots.txt fetches while the fetcher has room, each once
// its address's politeness allows; one held goes to the back of the line
// (at most 256 looked at per call).
void Worker::AddWaitingRobots(const Gate::Pass& pass) {
  size_t looked = 0;
  while (!robots_waiting_.empty() && fetcher_->Running() < max_running_ &&
         looked++ < 256) {
    RobotsRetry r = NextWaiting();
    if (Held(r)) continue;
    // Its address (politeness per address); while its name is looked up it
    // waits here, not in a transfer slot.
    std::optional<std::string> address = fetcher_->AddressFor(r.url);
    const Clock::time_point now = Clock::now();
    if (!address || (!address->empty() && !p_.frontier.TryStartAt(*address, now))) {
      WaitForRoom(std::move(r));
      continue;
    }
    // A multi-machine job's turn at the address (placement.h): refused, the
    // start counted here is taken back, the address held until its turn may
    // come.
    uint64_t turn = 0;
    if (p_.placement != nullptr && !address->empty()) {
      AddressTurn t = p_.placement->StartAt(*address, 0);
      if (!t.granted) {
        p_.frontier.UndoStartAt(*address, now);
        p_.frontier.HoldAddress(*address, now + t.wait);
        WaitForRoom(std::move(r));
        continue;
      }
      turn = t.token;
    }
    p_.hosts.SetRobotsInFlight(pass, r.host, true);  // until its result is taken up
    fetcher_->Add(r.url, [this, host = r.host, hops = r.hops, at = std::move(*address),
                          turn](FetchResult&& result) {
      completed_.push_back(
          Completed{true, host, hops, {}, std::move(result), std::nullopt, at, turn});
    });
  }
}

Status Worker::FinishRobots(const Gate::Pass& pass, const Completed& c,
                            const Prepared& p) {
  p_.hosts.SetRobotsInFlight(pass, c.host, false);
  const FetchResult& r = c.result;
  parsers::RobotsFetch outcome = parsers::RobotsFetchForStatus(r.status);
  if (outcome == parsers::RobotsFetch::kServerError ||
      outcome == parsers::RobotsFetch::kUnreachable)
    return RobotsFailed(pass, c, p);
  Status st = Record(r, p, nullptr, true, p_.hosts.RobotsFailures(pass, c.host) + 1);
  if (!st.ok()) return st;
  if (r.status >= 300 && r.status < 400 && !r.location.empty() &&
      c.hops < parsers::kMaxRobotsRedirects) {
    parsers::UrlResult next = parsers::ResolveHref(r.url, r.location, p_.config.url);
    if (next.ok()) {
      StartRobots(pass, c.host, *next, c.hops + 1);
      return Status::Ok();
    }
  }
  std::vector<std::string> sitemaps;
  std::optional<double> delay =
      p_.hosts.RobotsDone(pass, c.host, outcome, r.body, Clock::now(), &sitemaps);
  p_.frontier.SetAddress(c.host, r.ip);  // its pages' politeness per address
  p_.frontier.OpenHost(c.host, delay, Clock::now());
  return OfferSitemaps(pass, c.host, sitemaps);
}

}  // namespace crawler::engine
