// Worker (worker.h): handing due URLs to the fetcher. Each popped URL
// passes the node's routing, the job's turn at its address, robots.txt and
// the trap guards and budgets, then starts, or is skipped with a fetch-log
// line.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/worker.h"

namespace crawler::engine {

using frontier::Clock;

// Hands due URLs to the fetcher. Returns when the next URL becomes due, if
// nothing could be started now.
//
// Backpressure: no fetch starts while crawl.max_connections finished fetches
// wait to be parsed. Without it fetching ran ahead of parsing and the
// results waited with their bodies: on 1,000 hosts (bash
// scripts/bench-memory.sh 120) RSS was 577 MB after 2 minutes, 746
// fetches/s; with it 78 MB, 846 fetches/s (docs/benchmarks.md, "Memory over
// many hosts").
// No more hosts are popped while max_running_ robots.txt fetches wait here:
// the first worker to run popped every seed, its robots.txt fetches waited
// behind its own transfers, and 25 blackholes among them stalled 10^4
// hosts for 30 s while the other worker idled (FAULTS="--dead-first 10
// --dead-first-silent" bash scripts/bench-web.sh, docs/crawling.md: 61.0 s
// before, 40.2 s after; 10.1 s either way without the fault).
Result<std::optional<Clock::time_point>> Worker::StartFetches(const Gate::Pass& pass) {
  // First the leases whose turn at their address was asked for.
  for (size_t n = turn_waiting_.size(); n > 0 && !p_.state.failed(); --n) {
    TurnWait w = std::move(turn_waiting_.front());
    turn_waiting_.pop_front();
    if (!StartWithTurn(pass, std::move(w.lease), std::move(w.before))) break;
  }
  if (p_.state.max_pages_hit.load()) ReturnWaiting(pass);
  while (fetcher_->Running() + turn_waiting_.size() < max_running_ &&
         !p_.state.failed() && !p_.state.max_pages_hit.load() &&
         p_.results.Size() < p_.config.crawl.max_connections &&
         robots_waiting_.size() < max_running_) {
    Clock::time_point next_due{};
    auto popped = p_.frontier.Pop(Clock::now(), &next_due);
    if (!popped.ok()) return popped.status();
    if (!popped.value()) {
      if (next_due != Clock::time_point{})
        return std::optional<Clock::time_point>(next_due);
      break;
    }
    frontier::Lease lease = std::move(*popped.value());
    if (p_.placement != nullptr && !p_.placement->Fetchable(lease.host)) {
      if (p_.placement->GivenAway(lease.host)) {
        // Its shard was handed over while it waited here: its new owner's
        // (whose filter drops it if the handoff's checkpoint had it).
        p_.frontier.Release(lease);
        p_.placement->Ship({lease.entry});
        continue;
      }
      // Its shard's lease is not held (expired, or lost): not fetched; the
      // host is asked again a little later.
      p_.frontier.Defer(lease, Clock::now() + std::chrono::milliseconds(200));
      continue;
    }
    p_.state.busy.fetch_add(1);
    std::string_view path = std::string_view(lease.entry.url).substr(lease.host.size());
    HostTable::PageDecision d = p_.hosts.DecidePage(pass, lease.host, path, Clock::now());
    if (d.refresh_robots) StartRobots(pass, lease.host, lease.host + "/robots.txt", 0);
    // [recrawl]: the URL's history record, if it is a revisit.
    auto recalled = revisits_.Recall(lease.entry.url);
    if (!recalled.ok()) return recalled.status();
    std::optional<output::HistoryRecord> before = std::move(recalled).value();
    // A URL the history holds is revisited anyway: not forgotten (a later
    // link would queue it a second time).
    if (d.allowed && (d.over_limit || d.over_budget) && !before)
      Forget(pass, lease.entry.url);
    Status st = d.unresolved ? Skip(lease, "dns", &CrawlSummary::unresolved)
                : !d.allowed ? Skip(lease, "robots", &CrawlSummary::robots_blocked)
                : d.over_limit
                    ? Skip(lease, "max_pages_per_host", &CrawlSummary::trap_guard)
                : d.over_budget ? Skip(lease, "domain_pages", nullptr)
                                : Status::Ok();
    if (!st.ok()) return st;
    if (d.lost != nullptr) p_.counters.Lost(d.lost);
    if (!d.allowed || d.over_limit || d.over_budget) continue;  // skipped: no turn
    // The job's turn at its address, only for a request that will be made.
    if (!StartWithTurn(pass, std::move(lease), std::move(before))) break;
  }
  return std::optional<Clock::time_point>();
}

bool Worker::StartWithTurn(const Gate::Pass& pass, frontier::Lease lease,
                           std::optional<output::HistoryRecord> before) {
  uint64_t token = 0;
  if (p_.placement != nullptr && !lease.address.empty()) {
    AddressTurn turn = p_.placement->StartAt(lease.address, lease.id);
    if (turn.pending) {
      turn_waiting_.push_back({std::move(lease), std::move(before)});
      return true;
    }
    if (!turn.granted) {
      // Refused for now: the page is put back, and counted again when it
      // comes.
      const Clock::time_point until = Clock::now() + turn.wait;
      p_.frontier.Defer(lease, until);
      p_.frontier.HoldAddress(lease.address, until);
      p_.hosts.Uncount(pass, lease.host);
      p_.state.busy.fetch_sub(1);
      return true;
    }
    token = turn.token;
  }
  return StartPage(pass, std::move(lease), std::move(before), token);
}

void Worker::ReturnWaiting(const Gate::Pass& pass) {
  const Clock::time_point now = Clock::now();
  for (TurnWait& w : turn_waiting_) {
    p_.frontier.Defer(w.lease, now);
    p_.hosts.Uncount(pass, w.lease.host);
    p_.state.busy.fetch_sub(1);
  }
  turn_waiting_.clear();
}

// Starts the fetch of `lease`; false (and the URL stays queued) once
// crawl.max_pages fetches have started.
bool Worker::StartPage(const Gate::Pass&, frontier::Lease lease,
                       std::optional<output::HistoryRecord> before, uint64_t turn) {
  uint64_t started_before =
      p_.state.started.fetch_add(1);  // counted always: checkpoints keep it
  if (p_.config.crawl.max_pages > 0 && started_before >= p_.config.crawl.max_pages) {
    p_.state.max_pages_hit = true;
    if (turn != 0) p_.placement->EndAt(lease.address, turn);
    p_.frontier.Release(lease);
    p_.state.busy.fetch_sub(1);
    return false;
  }
  std::string url = lease.entry.url;
  std::vector<std::string> headers;
  if (before && p_.config.recrawl.conditional) headers = ConditionalHeaders(*before);
  std::string host = lease.host;
  auto shared = std::make_shared<Completed>(Completed{
      false, std::move(host), 0, std::move(lease), {}, std::move(before), {}, turn});
  fetcher_->Add(url, headers, [this, shared](FetchResult&& r) {
    shared->result = std::move(r);
    completed_.push_back(std::move(*shared));
  });
  return true;
}

// A popped URL that is not fetched (robots or the trap guard): a fetch-log
// line, no fetch. Runs inside the gate (StartFetches).
Status Worker::Skip(const frontier::Lease& lease, const char* why,
                    uint64_t CrawlSummary::*counter) {
  if (counter != nullptr) {
    p_.counters.Add(counter);
  } else {
    Guarded(lease.entry.url, why);
  }
  p_.frontier.Release(lease);
  p_.state.busy.fetch_sub(1);
  Status st = revisits_.Postpone(lease.entry.url);
  if (!st.ok()) return st;
  return p_.log.Append(
      {lease.entry.url, 0, nullptr, lease.entry.depth, lease.entry.referrer, why, false});
}

void Worker::Forget(const Gate::Pass&, const std::string& url) {
  // Erase finds the URL's own copy: it was inserted when it was admitted.
  // (With cluster.shared_dir, its shard's seen.log still lists it: a node
  // that takes the shard over has it seen again. docs/crawling.md.)
  const bool erased = p_.filter.options().allow_erase && p_.filter.Erase(url);
  p_.counters.Add(erased ? &CrawlSummary::forgotten : &CrawlSummary::cannot_forget);
}

}  // namespace crawler::engine
