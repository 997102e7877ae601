// See worker.h.
#include "engine/worker.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/url/parse.hpp>
#include <iterator>
#include <random>
#include <thread>

#include "browser/renderer.h"
#include "engine/retry.h"
#include "engine/url_guards.h"

namespace crawler::engine {

using frontier::Clock;

namespace {

// The back-off's random factor (retry.h: BackoffSeconds).
double Jitter() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0, 1)(rng);
}

}  // namespace

void Worker::Loop(const std::atomic<bool>& drain, const std::atomic<bool>& stop_now) {
  while (!stop_now.load() && !p_.state.failed()) {
    const bool draining = drain.load();
    if (draining && !turn_waiting_.empty()) {
      GateUnit unit(p_.gate);
      ReturnWaiting(unit.pass());  // not started: queued in the checkpoint
    }
    auto due = [&]() -> Result<std::optional<Clock::time_point>> {
      if (draining) return std::optional<Clock::time_point>();
      GateUnit unit(p_.gate);
      if (p_.placement != nullptr) {
        if (p_.placement->HandoffWork()) {
          Status st = HandOff(unit.pass());
          if (!st.ok()) return st;
        }
        // Shards taken over from a dead or leaving node.
        if (std::optional<ShardState> taken = p_.placement->TakeShardState()) {
          Status st = RestoreShards(unit.pass(), std::move(*taken));
          if (!st.ok()) return st;
        }
      }
      if (p_.placement != nullptr && !p_.placement->InboxEmpty()) {
        // URLs other nodes found for this node's hosts (those of a shard
        // being handed over meanwhile: to its stream, for its new owner).
        std::vector<frontier::UrlEntry> mine, theirs;
        for (frontier::UrlEntry& e : p_.placement->TakeInbox())
          (p_.placement->Handing(e.url) ? theirs : mine).push_back(std::move(e));
        if (!theirs.empty()) p_.placement->Ship(theirs);
        Status st = Admit(unit.pass(), std::move(mine));
        p_.placement->Admitted();
        if (!st.ok()) return st;
      }
      StartDueRobots(unit.pass());
      AddWaitingRobots(unit.pass());
      return StartFetches(unit.pass());
    }();
    if (!due.ok()) return p_.state.Fail(due.status());
    // Leases waiting for their turn (StartWithTurn) are tried again each ms.
    const auto idle = std::chrono::milliseconds(turn_waiting_.empty() ? 20 : 1);
    bool have_work = !p_.results.Empty();
    if (fetcher_->Running() > 0) {
      AbandonLapsed();
      fetcher_->Run(have_work ? std::chrono::milliseconds(0) : idle);
      if (!completed_.empty()) {
        {
          GateUnit unit(p_.gate);
          ConnectionsFreed(unit.pass());
        }
        p_.results.Push(&completed_);
        have_work = true;
      }
    }
    if (have_work) {
      Status st = ProcessOne();
      if (!st.ok()) return p_.state.Fail(st);
      continue;
    }
    if (fetcher_->Running() == 0) {
      // This worker's transfers done, the results taken, no page left in
      // the browser (any worker records one that comes back).
      // (rendering is read first: a page is queued before it stops counting.)
      if (draining && p_.state.rendering.load() == 0 && p_.results.Empty()) break;
      bool finished = [&] {
        GateUnit unit(p_.gate);
        return Finished(unit.pass());
      }();
      if (finished) break;
      // Nothing here: wait for a result, a host to become due or another
      // worker to queue URLs (at most 20 ms).
      auto cap = Clock::now() + idle;
      p_.results.WaitUntil(std::min(due.value().value_or(cap), cap));
    }
  }
}

// The requests that just ended free their addresses' connections now, not
// when their results are processed: with results waiting to be parsed, an
// address's max_connections_per_ip held back requests no server was
// serving (10^5 hosts: 5,600 hosts waiting for their address, docs/
// benchmarks.md).
void Worker::ConnectionsFreed(const Gate::Pass&) const {
  const auto now = Clock::now();
  for (const Completed& c : completed_) {
    if (c.robots) {
      // Counted at its address when it started (AddWaitingRobots).
      if (!c.started_at.empty()) p_.frontier.EndAt(c.started_at, now);
    } else if (!c.result.abandoned) {
      p_.frontier.Ended(c.lease, now);
    }
    // The job's turn at the address, abandoned or not.
    if (c.turn != 0)
      p_.placement->EndAt(c.robots ? c.started_at : c.lease.address, c.turn);
  }
}

bool Worker::Finished(const Gate::Pass&) const {
  // A cluster node ends with the job (another node may still send it URLs).
  // A continuous crawl ([recrawl]) runs until stopped (or max_pages).
  return p_.state.busy.load() == 0 &&
         (p_.state.max_pages_hit.load() ||
          (p_.frontier.Empty() && !p_.config.recrawl.enabled)) &&
         (p_.placement == nullptr || p_.placement->Done());
}

Status Worker::RestoreShards(const Gate::Pass& pass, ShardState s) {
  auto now = Clock::now();
  size_t hosts = s.frontier.hosts.size(), urls = s.frontier.urls.size();
  auto robots = p_.hosts.Restore(std::move(s.hosts), s.frontier.LeasedPerHost(), now);
  p_.hosts.RestoreDomains(std::move(s.domains));
  Status st = frontier::RestoreFrontier(std::move(s.frontier), now, &p_.frontier);
  if (!st.ok()) return st;
  // The shards' seen set: into the filter, and into this node's own seen
  // log (a later taker of these shards loads them from here). Their loss
  // was counted where they were first checked: RestoreHash does not count.
  uint64_t added = 0;
  for (const output::SeenRecord& r : s.seen)
    added += p_.filter.RestoreHash(r.hash) == dedup::InsertResult::kInserted;
  if (p_.seen != nullptr) {
    st = p_.seen->Append(s.seen);
    if (!st.ok()) return st;
  }
  for (const RobotsFetchToStart& r : robots) StartRobots(pass, r.host, r.url, r.hops);
  // The source node's outbox, to its owners again (the shards taken here are
  // not owned until ShardsLoaded: theirs go through their streams).
  std::vector<frontier::UrlEntry> mine, theirs;
  for (frontier::UrlEntry& e : s.outbox)
    (p_.placement->Owns(e.url) ? mine : theirs).push_back(std::move(e));
  if (!theirs.empty()) p_.placement->Ship(theirs);
  st = Admit(pass, std::move(mine));
  if (!st.ok()) return st;
  {
    // Their URL history, and ownership, at once: the Run thread's scheduler
    // postpones what this node does not own yet (crawl.cc, ScheduleDue).
    MutexLock moving(p_.state.shards_moving);
    st = revisits_.Arrive(s);
    if (!st.ok()) return st;
    p_.placement->ShardsLoaded(s.shards);
  }
  spdlog::info(
      "cluster: {} {} shards from {}: {} hosts, {} URLs queued, {} of {} seen URLs new "
      "to "
      "this node's filter",
      s.own ? "restored" : "took over", s.shards.size(), s.from, hosts, urls, added,
      s.seen.size());
  return Status::Ok();
}

Status Worker::HandOff(const Gate::Pass& pass) {
  std::vector<uint32_t> drop = p_.placement->TakeReleased();
  if (!drop.empty()) {
    std::sort(drop.begin(), drop.end());
    uint64_t urls = p_.frontier.DropHosts([&](std::string_view host) {
      return std::binary_search(drop.begin(), drop.end(), p_.placement->ShardOf(host));
    });
    Status st = revisits_.Erase(drop);
    if (!st.ok()) return st;
    p_.placement->Dropped(drop, urls);
    p_.state.shard_drops.fetch_add(1);
  }
  std::vector<uint32_t> draining = p_.placement->Draining();
  if (draining.empty()) return Status::Ok();
  // The shards with a page or robots.txt fetch in flight (the predicates
  // only note them) are not drained yet.
  std::sort(draining.begin(), draining.end());
  std::vector<uint32_t> busy;
  auto note = [&](std::string_view host) {
    uint32_t s = p_.placement->ShardOf(host);
    if (std::binary_search(draining.begin(), draining.end(), s)) busy.push_back(s);
    return false;
  };
  (void)p_.frontier.InFlight(note);
  // A robots.txt fetch not started yet (waiting out a retry's back-off, or
  // for room) is not waited for: it waits while the shard is handed
  // (MayStartRobots) and goes with it.
  (void)p_.hosts.RobotsInFlight(pass, note);
  std::sort(busy.begin(), busy.end());
  std::vector<uint32_t> drained;
  std::set_difference(draining.begin(), draining.end(), busy.begin(), busy.end(),
                      std::back_inserter(drained));
  if (!drained.empty()) p_.placement->Drained(drained);
  return Status::Ok();
}

Status Worker::ProcessOne() {
  std::optional<Completed> c = p_.results.TryPop();
  if (!c) return Status::Ok();
  if (c->result.abandoned) return Abandoned(*c);
  // Back through the queue once rendered (worker_render.cc).
  if (ToBrowser(*c, nullptr)) return Status::Ok();
  Prepared prepared = Prepare(*c);  // outside the gate: a checkpoint need not wait for it
  if (ToBrowser(*c, &prepared)) return Status::Ok();
  Status st;
  {
    GateUnit unit(p_.gate);
    st = c->robots ? FinishRobots(unit.pass(), *c, prepared)
                   : FinishPage(unit.pass(), *c, prepared);
  }
  p_.state.busy.fetch_sub(1);
  return st;
}

Worker::Prepared Worker::Prepare(const Completed& c) const {
  Prepared p;
  const FetchResult& r = c.result;
  if (r.status > 0) {
    const std::string head = output::HeadForStoredBody(r.response_head, r.body.size());
    p.date = std::chrono::system_clock::now();
    output::Exchange ex{.url = r.url,
                        .ip = r.ip,
                        .date = p.date,
                        .request = r.request_head,
                        .response_head = head,
                        .body = r.body,
                        .truncated = TruncatedReason(r),
                        .revisit = std::nullopt,
                        .payload_digest = {},
                        .more_headers = {}};
    p.visit = revisits_.Classify(c.before ? &*c.before : nullptr, r, !c.robots, &ex);
    // A 304's revisit keeps its capture's Content-Type (warc.h).
    const std::string not_modified =
        ex.revisit &&
                ex.revisit->profile == output::Revisit::Profile::kServerNotModified &&
                r.content_type_header.empty()
            ? output::HeadForNotModified(head, c.before->content_type)
            : std::string();
    if (!not_modified.empty()) ex.response_head = not_modified;
    p.warc = p_.warc.Prepare(ex);
  }
  bool html = r.content_type == "text/html" || r.content_type == "application/xhtml+xml";
  bool sitemap = !c.robots && c.lease.entry.kind == frontier::UrlEntry::Kind::kSitemap;
  if (sitemap && r.status >= 200 && r.status < 300) {
    p.sitemap = ReadSitemap(r, c.lease.entry.url);
  } else if (!c.robots && !sitemap && r.status >= 200 && r.status < 300 && html) {
    parsers::ExtractOptions eo;
    eo.include_assets = p_.config.crawl.include_assets;
    eo.url = p_.config.url;
    p.links = parsers::ExtractLinks(r.body, c.lease.entry.url, r.charset, eo);
  } else if (!c.robots && !sitemap && r.status >= 200 && r.status < 300 &&
             r.content_type == "text/css" && p_.config.crawl.include_assets) {
    parsers::ExtractOptions eo;
    eo.include_assets = true;
    eo.url = p_.config.url;
    p.links = parsers::ExtractCssLinks(r.body, c.lease.entry.url, eo);
  }
  if (c.rendered) PrepareRendered(c, p);
  return p;
}

// Counts, stores and logs a fetch; `page` is null for robots.txt.
Status Worker::Record(const FetchResult& r, const Prepared& p,
                      const frontier::UrlEntry* page, bool final, uint32_t robots_attempt,
                      std::string_view render, uint32_t resources) {
  // A failed attempt that is tried again counts as a retry, not a page.
  if (final) p_.counters.Fetched(r);
  if (r.status > 0) {
    Status st = p_.warc.Write(p.warc);
    if (st.ok() && page != nullptr && final)
      st =
          revisits_.Stored(r, p.visit, p.warc.response_id, p.warc.payload_digest, p.date);
    if (!st.ok()) return st;
  }
  std::string_view error = r.error == FetchError::kNone ? "" : FetchErrorName(r.error);
  const output::FetchLogResponse response{.content_type = r.content_type,
                                          .bytes = r.body.size(),
                                          .seconds = r.seconds,
                                          .truncated = r.truncated,
                                          .location = r.location,
                                          .ip = r.ip};
  if (page == nullptr) {
    return p_.log.Append(
        {r.url, r.status, &response, 0, "", error, true, robots_attempt, final});
  }
  if (r.error != FetchError::kNone)
    spdlog::warn("{}: {} ({})", page->url, error, r.error_message);
  return p_.log.Append({page->url, r.status, &response, page->depth, page->referrer,
                        error, false, page->attempt + 1, final, render, resources});
}

// robots.txt answered 5xx or not at all. RFC 9309 2.3.1.3/4: the host is
// fully disallowed while it is unreachable; a server gets over a 5xx or an
// outage, so it is fetched again first (as a page would be), the host's
// pages waiting meanwhile, and only then given up on.
Status Worker::RobotsFailed(const Gate::Pass& pass, const Completed& c,
                            const Prepared& p) {
  const FetchResult& r = c.result;
  if (r.other_address) {
    // Its address did not connect and the host has another: asked there
    // at once (AddWaitingRobots takes the new address's turn), not counted
    // as a failure of the host.
    Status st =
        Record(r, p, nullptr, /*final=*/false, p_.hosts.RobotsFailures(pass, c.host) + 1);
    if (!st.ok()) return st;
    p_.counters.Add(&CrawlSummary::other_address);
    p_.state.busy.fetch_add(1);
    RobotsLater({{}, c.host, r.url.empty() ? c.host + "/robots.txt" : r.url, c.hops},
                Clock::duration::zero());
    return Status::Ok();
  }
  uint32_t failures = p_.hosts.RobotsFailed(pass, c.host);
  // A name that does not exist (NXDOMAIN, or no address) is confirmed: asked
  // again, not from the resolver's negative entry, as any failure is retried
  // (fetch.max_retries, with back-off); only then are the host's pages
  // skipped. A lookup that failed while the resolver answered nobody (an
  // outage) defers the host for up to fetch.dns_retry_s, whatever
  // max_retries says: its queue waits, nothing is dropped. A name that
  // fails alone (a lame delegation) spends its retries as any failure does.
  const bool deferred = r.error == FetchError::kDnsFailure && r.dns_outage &&
                        DnsDefers(failures - 1, Policy());
  bool again = deferred || failures <= p_.config.fetch.max_retries;
  if (again && r.error == FetchError::kDns && p_.resolver != nullptr) {
    if (auto u = boost::urls::parse_uri(c.host); u && !u->encoded_host().empty())
      p_.resolver->Forget(std::string(u->encoded_host()));
  }
  Status st = Record(r, p, nullptr, /*final=*/!again, failures);
  if (!st.ok()) return st;
  std::string why = r.error == FetchError::kNone
                        ? std::string("unavailable")
                        : std::string(FetchErrorName(r.error)) + ": " + r.error_message;
  if (again) {
    double wait = BackoffSeconds(failures - 1, p_.config.fetch.retry_base_s,
                                 p_.config.fetch.retry_max_s, Jitter(),
                                 RetryAfterSeconds(r.retry_after, std::time(nullptr)));
    if (deferred) {
      wait = std::max(1.0, wait);
      p_.counters.Add(&CrawlSummary::dns_deferred);
      // Once per host: an outage defers thousands of hosts, each many times.
      if (failures == 1)
        spdlog::warn(
            "{}: robots.txt {}: the host waits, asked again with back-off for up to "
            "{:.0f} s (fetch.dns_retry_s)",
            c.host, why, p_.config.fetch.dns_retry_s);
    } else {
      spdlog::warn(
          "{}: robots.txt {} (status {}): fetched again in {:.1f} s (retry {} of {})",
          c.host, why, r.status, wait, failures, p_.config.fetch.max_retries);
    }
    p_.state.busy.fetch_add(1);  // the crawl is not over while it waits
    robots_retry_.push_back({Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(wait)),
                             c.host, r.url.empty() ? c.host + "/robots.txt" : r.url,
                             r.url.empty() ? 0 : c.hops});
    return Status::Ok();
  }
  spdlog::warn(
      "{}: robots.txt {} (status {}) after {} retries: the host is treated as fully "
      "disallowed",
      c.host, why, r.status, failures - 1);
  std::optional<double> delay = p_.hosts.RobotsDone(
      pass, c.host, parsers::RobotsFetchForStatus(r.status), r.body, Clock::now());
  // No answer: its pages are skipped ("dns" if its name did not resolve),
  // and lost if IsLoss.
  if (r.status == 0 && r.error != FetchError::kNone) {
    p_.hosts.SetUnanswered(pass, c.host, r.error);
    if (IsLoss(r.error)) p_.counters.LostHost(FetchErrorName(r.error));
  }
  p_.frontier.OpenHost(c.host, delay, Clock::now());
  return Status::Ok();
}

void Worker::LogIfParked(const std::string& host, const FetchResult& r) {
  if (SignalOf(r) != frontier::HostSignal::kUnreachable || !p_.frontier.Parked(host))
    return;
  spdlog::warn(
      "{}: no connection ({}) {} or more fetches in a row: parked, its next fetch in "
      "{:.0f} "
      "s "
      "(its queued URLs are kept)",
      host, FetchErrorName(r.error), p_.config.frontier.park_after,
      p_.config.frontier.park_s);
}

// A finished page fetch goes down the pipeline once: classified (final, or
// fetched again after a back-off; the host's signal), recorded (WARC, fetch
// log: every attempt), scheduled (the frontier's Done or Retry), and, if
// final, its links offered.
Status Worker::FinishPage(const Gate::Pass& pass, const Completed& c, const Prepared& p) {
  const FetchResult& r = c.result;
  const frontier::UrlEntry& e = c.lease.entry;
  const RetryPolicy policy = Policy();
  // The host moves with its address (politeness per address): to the one
  // it connected to, or after an address that did not connect, to the one
  // its next fetch goes to.
  if (r.other_address) {
    std::optional<std::string> next = fetcher_->AddressFor(r.url);
    if (next && !next->empty()) p_.frontier.SetAddress(c.lease.host, *next);
  } else if (!r.ip.empty()) {
    p_.frontier.SetAddress(c.lease.host, r.ip);
  }
  const Verdict v = Classify(r, e.attempt, policy, Jitter(), std::time(nullptr));
  // A rendered page's responses go in before its own line (the count is
  // in that line); what the browser could not render is said there too.
  std::string render;
  uint32_t resources = 0;
  if (c.render_sent) {
    if (c.rendered) {
      Status stored = StoreResources(pass, p, &resources);
      if (!stored.ok()) return stored;
      render = c.rendered->idle ? "rendered" : "rendered-cap";
      p_.counters.Add(&CrawlSummary::rendered);
    } else {
      render = "render-failed: " + c.render_error;
      p_.counters.Add(&CrawlSummary::render_failed);
    }
  }
  Status st = Record(r, p, &e, v.final, 1, render, resources);
  if (!st.ok()) return st;
  // Measured after the record: a retry's wait runs from when its answer was in.
  auto now = Clock::now();
  if (!v.final) {
    // The frontier holds it (it passed dedup once) and hands it out again.
    p_.counters.Add(r.other_address ? &CrawlSummary::other_address
                    : r.dns_outage  ? &CrawlSummary::dns_deferred
                                    : &CrawlSummary::retries);
    st = p_.frontier.Retry(c.lease, now, r.seconds,
                           now + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(v.wait_s)),
                           v.signal);
  } else {
    if (v.gave_up) {
      p_.counters.Add(&CrawlSummary::gave_up);
      if (r.status == 0 && IsLoss(r.error)) p_.counters.Lost(FetchErrorName(r.error));
      if (!c.before) Forget(pass, e.url);  // a revisit stays in the history
    }
    p_.frontier.Done(c.lease, now, r.seconds, v.signal);
    bool forget = false;
    st = revisits_.Remember({.result = r,
                             .entry = e,
                             .before = c.before ? &*c.before : nullptr,
                             .classified = p.visit,
                             .response_id = p.warc.response_id,
                             .payload_digest = p.warc.payload_digest,
                             .date = p.date},
                            &forget);
    if (forget) Forget(pass, e.url);
  }
  LogIfParked(c.lease.host, r);
  if (!st.ok() || !v.final) return st;
  return OfferLinks(pass, e, r, p);
}

// A final page's redirect target, links and sitemap entries: depth, scope,
// then to the filter and the frontier (or to the node that owns the host).
Status Worker::OfferLinks(const Gate::Pass& pass, const frontier::UrlEntry& e,
                          const FetchResult& r, const Prepared& p) {
  std::vector<frontier::UrlEntry> next, theirs;
  uint64_t too_deep = 0, out_of_scope = 0;
  using Kind = frontier::UrlEntry::Kind;
  const UrlGuards guards_ = GuardsOf(p_.config.crawl);
  // A sitemap's depth is its nesting (sitemap_max_depth bounds it), not a
  // link distance.
  auto offer = [&](const std::string& url, uint32_t depth, uint32_t redirects, Kind kind,
                   bool requisite = false) {
    if (kind == Kind::kPage && depth > p_.config.crawl.max_depth) {
      ++too_deep;
    } else if (!(requisite ? p_.scope.AllowsRequisite(url, e.url)
                           : p_.scope.Allows(url))) {
      ++out_of_scope;
    } else if (const char* guard = TrippedGuard(url, guards_)) {
      Guarded(url, guard);
    } else {
      // Another cluster node's host: to its owner.
      frontier::UrlEntry entry{url, depth, e.url, redirects};
      entry.kind = kind;
      (p_.placement != nullptr && !p_.placement->Owns(url) ? theirs : next)
          .push_back(std::move(entry));
    }
  };
  if (r.status >= 300 && r.status < 400 && !r.location.empty()) {
    // A redirect target is a URL like any other; the hop keeps the depth.
    if (e.redirects < p_.config.fetch.max_redirects) {
      parsers::UrlResult target = parsers::ResolveHref(e.url, r.location, p_.config.url);
      if (target.ok()) offer(*target, e.depth, e.redirects + 1, e.kind);
    } else {
      p_.counters.Add(&CrawlSummary::too_many_redirects);
    }
  }
  if (!p.links.meta_nofollow) {
    for (const parsers::Link& l : p.links.links) {
      if (!l.nofollow)
        offer(l.url, e.depth + 1, 0, Kind::kPage, parsers::IsRequisite(l.source));
    }
  }
  if (p.sitemap) {
    // An index's sitemaps one level deeper; a urlset's pages at depth 1.
    for (const std::string& problem : p.sitemap->problems)
      spdlog::warn("{}: sitemap: {}", e.url, problem);
    bool deeper = p.sitemap->index && e.depth + 1 > p_.config.crawl.sitemap_max_depth;
    if (deeper) {
      spdlog::warn(
          "{}: a sitemap index nested deeper than crawl.sitemap_max_depth ({}): "
          "its {} sitemaps are not fetched",
          e.url, p_.config.crawl.sitemap_max_depth, p.sitemap->urls.size());
    } else {
      for (const std::string& url : p.sitemap->urls) {
        if (p.sitemap->index) {
          offer(url, e.depth + 1, 0, Kind::kSitemap);
        } else {
          offer(url, 1, 0, Kind::kPage);
        }
      }
    }
  }
  p_.counters.Add(&CrawlSummary::too_deep, too_deep);
  p_.counters.Add(&CrawlSummary::out_of_scope, out_of_scope);
  if (!theirs.empty()) p_.placement->Ship(theirs);
  return Admit(pass, std::move(next));
}

std::vector<std::unique_ptr<Worker>> Worker::MakeAll(const Config& config,
                                                     const WorkerParts& parts,
                                                     Status* error) {
  std::vector<std::unique_ptr<Worker>> workers;
  uint32_t n = config.crawl.workers != 0
                   ? config.crawl.workers
                   : std::max(1u, std::thread::hardware_concurrency());
  n = std::min(n, config.crawl.max_connections);
  if (config.fetch.insecure) {
    spdlog::warn(
        "fetch.insecure = true: TLS certificates and host names are NOT checked; any "
        "server (or anyone between) can pose as the sites crawled");
  }
  if (!config.fetch.proxy.empty())
    spdlog::info("fetching through {}", config.fetch.proxy);
  for (uint32_t i = 0; i < n; ++i) {
    FetchOptions fetch;
    fetch.user_agent = config.crawl.user_agent;
    fetch.connect_timeout_s = config.fetch.connect_timeout_s;
    fetch.timeout_s = config.fetch.timeout_s;
    fetch.low_speed_bytes = config.fetch.low_speed_bytes;
    fetch.low_speed_time_s = config.fetch.low_speed_time_s;
    fetch.max_body_bytes = config.fetch.max_body_bytes;
    fetch.spool_body_bytes = config.fetch.spool_body_bytes;
    fetch.spool_dir = parts.spool_dir;
    fetch.resolve = config.fetch.resolve;
    fetch.resolver = parts.resolver;
    fetch.ca_file = config.fetch.ca_file;
    fetch.insecure = config.fetch.insecure;
    fetch.proxy = config.fetch.proxy;
    // max_connections is the total: split it over the workers.
    size_t share =
        config.crawl.max_connections / n + (i < config.crawl.max_connections % n ? 1 : 0);
    fetch.max_connections = static_cast<uint32_t>(share);
    // libcurl's limit per bundle is a safety net under the frontier's own
    // counts, never tighter than them. A bundle is a connect-to address
    // when the address is pinned (the resolver's answer, fetch.resolve),
    // so it must allow what the frontier allows at one address: at the
    // host's own limit, 200 hosts on one address shared one connection
    // (312.9 s for a crawl the frontier's limits allow in 158.7 s).
    // Robots fetches come on top of the frontier's per-host transfers.
    const uint32_t per_host = config.frontier.max_connections_per_host;
    const uint32_t per_ip = config.frontier.max_connections_per_ip == 0
                                ? 4 * per_host  // the frontier's default (frontier.h)
                                : config.frontier.max_connections_per_ip;
    fetch.max_connections_per_host = std::max(per_host, per_ip) + 1;
    auto fetcher = Fetcher::Create(fetch);
    if (!fetcher.ok()) {
      *error = fetcher.status();
      return {};
    }
    workers.push_back(std::make_unique<Worker>(parts, std::move(fetcher).value(), share));
  }
  if (config.browser.render == "auto") {
    auto learning = std::make_shared<RenderLearning>();
    for (auto& w : workers) w->render_learning_ = learning;
  }
  return workers;
}

}  // namespace crawler::engine
