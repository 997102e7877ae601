// The crawl frontier; see frontier/frontier.h.
#include "frontier/frontier.h"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "frontier_impl.h"

namespace crawler::frontier {

std::string_view HostKey(std::string_view url) {
  size_t sep = url.find("://");
  if (sep == std::string_view::npos) return {};
  size_t end = url.find_first_of("/?#", sep + 3);
  return url.substr(0, end == std::string_view::npos ? url.size() : end);
}

Frontier::Frontier(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Frontier::~Frontier() = default;

Result<std::unique_ptr<Frontier>> Frontier::Create(const FrontierOptions& options) {
  auto bad = [](const std::string& m) {
    return Status::Error(Status::Code::kInvalidArgument, m);
  };
  if (options.max_memory_urls == 0)
    return bad("frontier.max_memory_urls must be at least 1");
  if (options.max_connections_per_host == 0) {
    return bad("frontier.max_connections_per_host must be at least 1");
  }
  if (!(options.min_delay_s >= 0) || !(options.max_crawl_delay_s >= 0) ||
      !(options.response_factor >= 0)) {
    return bad("frontier delays must be >= 0");
  }
  if (options.spill_chunk == 0) return bad("frontier.spill_chunk must be at least 1");
  return std::unique_ptr<Frontier>(
      new Frontier(std::make_unique<Impl>(options.Resolved())));
}

FrontierOptions FrontierOptions::Resolved() const {
  FrontierOptions o = *this;
  if (o.min_delay_ip_s < 0) o.min_delay_ip_s = o.min_delay_s / 4;
  if (o.max_connections_per_ip == 0)
    o.max_connections_per_ip = 4 * o.max_connections_per_host;
  return o;
}

Result<AdmitResult> Frontier::Admit(std::vector<UrlEntry> entries, dedup::Filter& filter,
                                    std::vector<size_t>* inserted) {
  std::vector<std::string_view> keys;
  keys.reserve(entries.size());
  for (const UrlEntry& e : entries) keys.push_back(e.url);
  std::vector<dedup::InsertResult> results(entries.size());
  filter.InsertBatch(keys, results);  // outside our lock: the filter has its own
  AdmitResult out;
  MutexLock lock(impl_->mu);
  for (size_t i = 0; i < entries.size(); ++i) {
    switch (results[i]) {
      case dedup::InsertResult::kPresent:
        ++out.duplicates;
        continue;
      case dedup::InsertResult::kFull:
        ++out.refused_full;
        continue;
      case dedup::InsertResult::kInserted:
        break;
    }
    ++out.admitted;
    if (inserted != nullptr) inserted->push_back(i);
    // A redirect's target goes first among its host's URLs of its depth:
    // the rest of a fetch under way, not a new page (a chain of hops is
    // fetched hop after hop, not one hop per pass over the host's queue).
    const bool first = entries[i].redirects > 0 && !entries[i].revisit;
    Status st = impl_->Push(std::move(entries[i]), &out.new_hosts, first);
    if (!st.ok()) {
      impl_->admitted += out.admitted;
      return st;
    }
  }
  impl_->admitted += out.admitted;
  impl_->duplicates += out.duplicates;
  impl_->refused_full += out.refused_full;
  return out;
}

void Frontier::OpenHost(std::string_view host, std::optional<double> crawl_delay_s,
                        std::optional<Clock::time_point> fetched_at) {
  MutexLock lock(impl_->mu);
  size_t id = impl_->HostFor(host, nullptr);
  impl_->Unschedule(id);  // if it was its address's waker, another takes over
  impl_->WakeIp(impl_->hosts[id].ip);
  Impl::Host& h = impl_->hosts[id];
  h.open = true;
  h.crawl_delay_s = crawl_delay_s.value_or(0);
  if (fetched_at) {
    auto delay = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(impl_->DelayAfterFetch(h, 0)));
    h.due = std::max(h.due, *fetched_at + delay);
  }
  impl_->MaybeSchedule(id);
}

Result<std::optional<Lease>> Frontier::Pop(Clock::time_point now,
                                           Clock::time_point* next_due) {
  Impl& m = *impl_;
  MutexLock lock(m.mu);
  m.latest = std::max(m.latest, now);
  // The due host picked (PickDue) whose address is free too; the others wait for
  // their addresses (HoldForIp), each once.
  size_t id = 0;
  for (;;) {
    if (m.schedule.empty()) return std::optional<Lease>();
    const Clock::time_point due = m.schedule.begin()->first;
    if (due > now) {
      if (next_due != nullptr) *next_due = due;
      return std::optional<Lease>();
    }
    id = m.PickDue(now);
    if (!m.IpHolds(id, now)) break;
    m.HoldForIp(id);
  }
  m.Unschedule(id);
  Impl::Host& h = m.hosts[id];
  if (h.DiskFirst()) {
    Status st = m.Refill(h);
    if (!st.ok()) return st;
  }
  Lease lease{h.PopRam(), h.key, m.next_lease++,
              h.ip != Impl::kNoIp ? m.ips[h.ip].address : std::string(), now};
  m.CountDepth(lease.entry.depth, -1);
  m.leased.emplace(lease.id, std::make_pair(id, lease.entry));
  --m.in_memory;
  ++h.in_flight;
  ++m.in_flight;
  if (h.ip != Impl::kNoIp) {
    m.IpStarted(m.ips[h.ip], now);
    m.lease_ip.emplace(lease.id, h.ip);
    m.WakeIp(h.ip);  // the next host in its line, for when the address is due
  }
  // Request starts to one host are at least min_delay apart.
  h.due = std::max(h.due, now + m.HostDelay());
  m.MaybeSchedule(id);
  return std::optional<Lease>(std::move(lease));
}

void Frontier::Done(const Lease& lease, Clock::time_point now, double response_s,
                    HostSignal signal) {
  Impl& m = *impl_;
  MutexLock lock(m.mu);
  std::optional<size_t> id = m.EndLease(lease, now);
  if (!id) return;
  Impl::Host& h = m.hosts[*id];
  m.Unschedule(*id);
  m.AfterFetch(h, now, response_s, signal);
  m.MaybeSchedule(*id);
  m.WakeIp(h.ip);  // if it was its address's waker and is done, the next one
}

void Frontier::SetAddress(std::string_view host, std::string_view address) {
  Impl& m = *impl_;
  MutexLock lock(m.mu);
  auto it = m.host_index.find(host);
  if (it == m.host_index.end() || address.empty()) return;
  const size_t id = it->second;
  const uint32_t to = m.IpFor(address), from = m.hosts[id].ip;
  if (to == from) return;
  Impl::Host& h = m.hosts[id];
  m.Unschedule(id);
  // Its requests still under way count at the new address.
  for (auto& [lease_id, ip] : m.lease_ip) {
    auto l = m.leased.find(lease_id);
    if (l == m.leased.end() || l->second.first != id || ip == to) continue;
    if (m.ips[ip].in_flight > 0) --m.ips[ip].in_flight;
    ++m.ips[to].in_flight;
    ip = to;
  }
  if (from != Impl::kNoIp && h.ip_parked) {
    Impl::Ip& old = m.ips[from];
    old.parked->erase(std::find(old.parked->begin(), old.parked->end(), id));
    if (old.parked->empty()) old.parked.reset();
    h.ip_parked = false;
  }
  h.ip = to;
  ++m.ips[to].hosts;
  if (from != Impl::kNoIp && --m.ips[from].hosts == 0) m.ListIdle(from);
  m.WakeIp(from);
  m.MaybeSchedule(id);
  m.WakeIp(to);
}

bool Frontier::TryStartAt(std::string_view address, Clock::time_point now) {
  Impl& m = *impl_;
  MutexLock lock(m.mu);
  m.latest = std::max(m.latest, now);
  Impl::Ip& ip = m.ips[m.IpFor(address)];
  if (m.IpBlocked(ip, now)) return false;
  m.IpStarted(ip, now);
  return true;
}

void Frontier::EndAt(std::string_view address, Clock::time_point now) {
  Impl& m = *impl_;
  MutexLock lock(m.mu);
  auto it = m.ip_index.find(address);
  if (it == m.ip_index.end() || m.ips[*it].in_flight == 0) return;
  const uint32_t slot = *it;
  m.IpEnded(m.ips[slot], now);
  m.WakeIp(slot);
  m.latest = std::max(m.latest, now);
  m.ReclaimIps();
}

void Frontier::UndoStartAt(std::string_view address, Clock::time_point now) {
  Impl& m = *impl_;
  MutexLock lock(m.mu);
  auto it = m.ip_index.find(address);
  if (it == m.ip_index.end() || m.ips[*it].in_flight == 0) return;
  const uint32_t slot = *it;
  m.IpUnstarted(m.ips[slot], now);
  m.IpEnded(m.ips[slot], std::nullopt);
  m.WakeIp(slot);
  m.ReclaimIps();
}

void Frontier::HoldAddress(std::string_view address, Clock::time_point until) {
  Impl& m = *impl_;
  MutexLock lock(m.mu);
  const uint32_t index = m.IpFor(address);
  m.ips[index].due = std::max(m.ips[index].due, until);
  m.WakeIp(index);
}

void Frontier::Ended(const Lease& lease, Clock::time_point ended) {
  MutexLock lock(impl_->mu);
  impl_->FreeAddress(lease.id, ended);
}

void Frontier::Release(const Lease& lease) {
  MutexLock lock(impl_->mu);
  std::optional<size_t> id = impl_->EndLease(lease);
  if (id) {
    impl_->MaybeSchedule(*id);
    impl_->WakeIp(impl_->hosts[*id].ip);
  }
}

Status Frontier::Retry(const Lease& lease, Clock::time_point now, double response_s,
                       Clock::time_point until, HostSignal signal) {
  Impl& m = *impl_;
  MutexLock lock(m.mu);
  auto it = m.leased.find(lease.id);
  if (it == m.leased.end()) return Status::Ok();
  UrlEntry entry = it->second.second;
  ++entry.attempt;
  std::optional<size_t> id = m.EndLease(lease, now);
  Impl::Host& h = m.hosts[*id];
  m.Unschedule(*id);
  m.AfterFetch(h, now, response_s, signal);
  bool hold_host = signal == HostSignal::kOverloaded ||
                   signal == HostSignal::kUnreachable ||
                   signal == HostSignal::kUnresolved;
  if (hold_host || h.Queued() == 0) h.due = std::max(h.due, until);
  Status st = m.Push(std::move(entry), nullptr);  // schedules the host again
  m.WakeIp(h.ip);
  return st;
}

void Frontier::Defer(const Lease& lease, Clock::time_point until) {
  Impl& m = *impl_;
  MutexLock lock(m.mu);
  auto it = m.leased.find(lease.id);
  if (it == m.leased.end()) return;
  UrlEntry entry = it->second.second;
  if (auto at = m.lease_ip.find(lease.id); at != m.lease_ip.end())
    m.IpUnstarted(m.ips[at->second], lease.popped);
  std::optional<size_t> id = m.EndLease(lease);
  Impl::Host& h = m.hosts[*id];
  m.Unschedule(*id);
  m.CountDepth(entry.depth, 1);
  h.ram.PushFront(std::move(entry));
  ++m.in_memory;
  if (h.due == lease.popped + m.HostDelay()) h.due = lease.popped;
  h.due = std::max(h.due, until);
  m.MaybeSchedule(*id);
  m.WakeIp(h.ip);
}

bool Frontier::Parked(std::string_view host) const {
  const Impl& m = *impl_;
  MutexLock lock(m.mu);
  auto it = m.host_index.find(host);
  return it != m.host_index.end() && m.hosts[it->second].backoff.Parked(m.options);
}

FrontierStats Frontier::Stats(Clock::time_point now) const {
  const Impl& m = *impl_;
  MutexLock lock(m.mu);
  FrontierStats s;
  s.queued_memory = m.in_memory;
  s.queued_disk = m.on_disk;
  s.in_flight = m.in_flight;
  s.hosts = m.hosts.size();
  s.addresses = m.ips.size() - m.free_ips.size();
  s.admitted = m.admitted;
  s.duplicates = m.duplicates;
  s.refused_full = m.refused_full;
  s.spilled = m.spilled;
  s.depths.assign(m.depth_counts.begin(), m.depth_counts.end());
  for (const Impl::Host& h : m.hosts) {
    if (h.backoff.slow_s > 0) ++s.hosts_backing_off;
    if (h.backoff.Parked(m.options)) ++s.hosts_parked;
    if (!h.open) {
      ++s.hosts_waiting_robots;
    } else if (h.Queued() > 0) {
      bool ready = h.due <= now && h.in_flight < m.options.max_connections_per_host &&
                   !h.ip_parked;
      ++(ready ? s.hosts_ready : s.hosts_waiting_politeness);
      if (h.ip_parked) ++s.hosts_waiting_ip;
    }
  }
  return s;
}

uint64_t Frontier::DropHosts(const std::function<bool(std::string_view)>& handed) {
  Impl& m = *impl_;
  MutexLock lock(m.mu);
  uint64_t dropped = 0;
  for (size_t id = 0; id < m.hosts.size(); ++id) {
    Impl::Host& h = m.hosts[id];
    if (h.Queued() == 0 || !handed(h.key)) continue;
    m.Unschedule(id);
    std::vector<uint32_t> depths;
    h.ram.ForEach([&](const UrlEntry& e) { depths.push_back(e.depth); });
    for (uint32_t depth : depths) m.CountDepth(depth, -1);
    for (const UrlEntry& e : h.write_buf) m.CountDepth(e.depth, -1);
    for (const auto& [depth, n] : h.file_depths)
      m.CountDepth(depth, -static_cast<int64_t>(n));
    if (h.on_disk > 0) m.DrainedFile(h);
    dropped += h.Queued();
    m.in_memory -= h.ram.size() + h.write_buf.size();
    m.buffered -= h.write_buf.size();
    m.on_disk -= h.on_disk;
    h.ram.Clear();
    std::vector<UrlEntry>().swap(h.write_buf);
    h.on_disk = 0;
    h.disk_min_depth = UINT32_MAX;
    m.WakeIp(h.ip);  // it may have been its address's waker
  }
  return dropped;
}

uint64_t Frontier::InFlight(const std::function<bool(std::string_view)>& which) const {
  const Impl& m = *impl_;
  MutexLock lock(m.mu);
  uint64_t n = 0;
  for (const Impl::Host& h : m.hosts)
    if (h.in_flight > 0 && which(h.key)) n += h.in_flight;
  return n;
}

void Frontier::ForEachQueued(
    const std::function<void(std::string_view, uint64_t)>& f) const {
  const Impl& m = *impl_;
  MutexLock lock(m.mu);
  for (const Impl::Host& h : m.hosts)
    if (h.Queued() > 0) f(h.key, h.Queued());
}

void Frontier::RemoveDrained() {
  MutexLock lock(impl_->mu);
  for (const std::string& path : impl_->drained) std::remove(path.c_str());
  impl_->drained.clear();
}

bool Frontier::Empty() const {
  MutexLock lock(impl_->mu);
  return impl_->in_memory + impl_->on_disk + impl_->in_flight == 0;
}

}  // namespace crawler::frontier
