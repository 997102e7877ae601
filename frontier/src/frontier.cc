// The crawl frontier; see frontier/frontier.h.
#include "frontier/frontier.h"

#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#include "base/bytes.h"
#include "base/file_util.h"
#include "base/mutex.h"
#include "host_backoff.h"
#include "spill_record.h"

namespace crawler::frontier {
namespace {

// Pending spill records held in RAM across all hosts before they are
// appended to their files (amortises open/append/close).
constexpr uint64_t kMaxBufferedSpill = 8192;

}  // namespace

std::string_view HostKey(std::string_view url) {
  size_t sep = url.find("://");
  if (sep == std::string_view::npos) return {};
  size_t end = url.find_first_of("/?#", sep + 3);
  return url.substr(0, end == std::string_view::npos ? url.size() : end);
}

struct Frontier::Impl {
  struct Host {
    std::string key;
    std::map<uint32_t, std::deque<UrlEntry>> ram;  // by depth; FIFO within one
    uint64_t ram_size = 0;
    uint32_t disk_min_depth =
        UINT32_MAX;                   // smallest depth spilled since the file was drained
    std::string spill_path;           // "" until the host spills (again)
    uint32_t spill_gen = 0;           // files are numbered; a drained one is not reused
    uint64_t on_disk = 0;             // records in the file not yet read back
    uint64_t read_offset = 0;         // byte offset of the next unread record
    std::vector<UrlEntry> write_buf;  // FIFO tail, after the file's records
    bool open = false;
    double crawl_delay_s = 0;
    Clock::time_point due{};
    uint32_t in_flight = 0;
    bool scheduled = false;
    HostBackoff backoff;
    uint64_t Queued() const { return ram_size + on_disk + write_buf.size(); }
    void PushRam(UrlEntry e) {
      ram[e.depth].push_back(std::move(e));
      ++ram_size;
    }
    UrlEntry PopRam() {
      auto it = ram.begin();
      UrlEntry e = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) ram.erase(it);
      --ram_size;
      return e;
    }
    // The spilled part holds a URL shallower than everything in RAM.
    bool DiskFirst() const {
      return Spilling() && (ram.empty() || disk_min_depth < ram.begin()->first);
    }
    bool Spilling() const { return on_disk + write_buf.size() > 0; }
  };

  explicit Impl(const FrontierOptions& o) : options(o) {}

  ~Impl() {
    for (const Host& h : hosts) {
      if (!h.spill_path.empty()) std::remove(h.spill_path.c_str());
    }
    for (const std::string& path : drained) std::remove(path.c_str());
  }

  const FrontierOptions options;
  // The one lock. A forked checkpoint writer takes it (ForEachEntry), so the
  // engine calls the frontier from worker threads only inside its checkpoint
  // gate (crawler/src/gate.h).
  mutable Mutex mu;
  std::vector<Host> hosts GUARDED_BY(mu);
  std::unordered_map<std::string, size_t> host_index GUARDED_BY(mu);
  // open, non-empty, below the limit
  std::set<std::pair<Clock::time_point, size_t>> schedule GUARDED_BY(mu);
  uint64_t in_memory GUARDED_BY(mu) = 0;  // ram + write_buf entries over all hosts
  uint64_t buffered GUARDED_BY(mu) = 0;   // write_buf entries over all hosts
  uint64_t on_disk GUARDED_BY(mu) = 0;
  uint64_t in_flight GUARDED_BY(mu) = 0;
  uint64_t admitted GUARDED_BY(mu) = 0, duplicates GUARDED_BY(mu) = 0;
  uint64_t refused_full GUARDED_BY(mu) = 0, spilled GUARDED_BY(mu) = 0;
  uint64_t next_lease GUARDED_BY(mu) = 1;
  // by lease id (= Pop order)
  std::map<uint64_t, std::pair<size_t, UrlEntry>> leased GUARDED_BY(mu);
  std::map<uint32_t, uint64_t> depth_counts GUARDED_BY(mu);  // queued URLs by depth
  std::vector<std::string> drained GUARDED_BY(mu);           // read-back spill files

  void CountDepth(uint32_t depth, int64_t delta) REQUIRES(mu) {
    auto it = depth_counts.try_emplace(depth, 0).first;
    it->second += static_cast<uint64_t>(delta);
    if (it->second == 0) depth_counts.erase(it);
  }

  size_t HostFor(std::string_view key, std::vector<std::string>* new_hosts) REQUIRES(mu) {
    auto it = host_index.find(std::string(key));
    if (it != host_index.end()) return it->second;
    size_t id = hosts.size();
    hosts.emplace_back();
    hosts.back().key = std::string(key);
    host_index.emplace(std::string(key), id);
    if (new_hosts != nullptr) new_hosts->emplace_back(key);
    return id;
  }

  void MaybeSchedule(size_t id) REQUIRES(mu) {
    Host& h = hosts[id];
    if (h.open && !h.scheduled && h.Queued() > 0 &&
        h.in_flight < options.max_connections_per_host) {
      schedule.emplace(h.due, id);
      h.scheduled = true;
    }
  }

  void Unschedule(size_t id) REQUIRES(mu) {
    Host& h = hosts[id];
    if (h.scheduled) {
      schedule.erase({h.due, id});
      h.scheduled = false;
    }
  }

  Status Push(UrlEntry e, std::vector<std::string>* new_hosts) REQUIRES(mu) {
    size_t id = HostFor(HostKey(e.url), new_hosts);
    Host& h = hosts[id];
    CountDepth(e.depth, 1);
    if (!h.Spilling() && in_memory < options.max_memory_urls) {
      h.PushRam(std::move(e));
    } else {
      h.disk_min_depth = std::min(h.disk_min_depth, e.depth);
      h.write_buf.push_back(std::move(e));
      ++buffered;
      ++spilled;
    }
    ++in_memory;
    MaybeSchedule(id);
    if (buffered > kMaxBufferedSpill) return FlushAll();
    return Status::Ok();
  }

  Status FlushAll() REQUIRES(mu) {
    for (Host& h : hosts) {
      Status st = Flush(h);
      if (!st.ok()) return st;
    }
    return Status::Ok();
  }

  Status Flush(Host& h) REQUIRES(mu) {
    if (h.write_buf.empty()) return Status::Ok();
    if (h.spill_path.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(options.spill_dir, ec);
      if (options.spill_dir.empty() || ec) {
        return Status::Error(Status::Code::kIoError,
                             "frontier spill directory '" + options.spill_dir +
                                 "' cannot be created" + (ec ? ": " + ec.message() : ""));
      }
      char name[48];
      std::snprintf(
          name, sizeof(name), "host-%016llx-%u.q",
          static_cast<unsigned long long>(XXH3_64bits(h.key.data(), h.key.size())),
          ++h.spill_gen);
      h.spill_path = options.spill_dir + "/" + name;
    }
    ByteWriter w;
    for (const UrlEntry& e : h.write_buf) EncodeSpillRecord(e, &w);
    std::string_view bytes = w.view();
    std::FILE* f = std::fopen(h.spill_path.c_str(), "ab");
    if (f == nullptr) return IoError(h.spill_path, "open");
    bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    ok = (std::fclose(f) == 0) && ok;
    if (!ok) return IoError(h.spill_path, "write");
    h.on_disk += h.write_buf.size();
    on_disk += h.write_buf.size();
    in_memory -= h.write_buf.size();
    buffered -= h.write_buf.size();
    h.write_buf.clear();
    return Status::Ok();
  }

  // Moves up to one chunk from the host's file into its RAM queue.
  Status Refill(Host& h) REQUIRES(mu) {
    if (h.on_disk == 0) {
      // Everything spilled is still buffered: it is the FIFO order's next part.
      for (UrlEntry& e : h.write_buf) h.PushRam(std::move(e));
      buffered -= h.write_buf.size();
      h.write_buf.clear();
      h.disk_min_depth = UINT32_MAX;
      return Status::Ok();
    }
    uint64_t room =
        options.max_memory_urls > in_memory ? options.max_memory_urls - in_memory : 0;
    uint64_t want = std::clamp<uint64_t>(room, 1, options.spill_chunk);
    std::FILE* f = std::fopen(h.spill_path.c_str(), "rb");
    if (f == nullptr) return IoError(h.spill_path, "open");
    if (std::fseek(f, static_cast<long>(h.read_offset), SEEK_SET) != 0) {
      std::fclose(f);
      return IoError(h.spill_path, "seek");
    }
    uint64_t got = 0;
    while (got < want && got < h.on_disk) {
      UrlEntry e;
      uint64_t bytes = 0;
      if (!ReadSpillRecord(f, &e, &bytes)) break;
      h.read_offset += bytes;
      h.PushRam(std::move(e));
      ++got;
    }
    std::fclose(f);
    if (got == 0) {
      return Status::Error(
          Status::Code::kCorruption,
          h.spill_path + ": spill file ends early (" + std::to_string(h.on_disk) +
              " records expected at offset " + std::to_string(h.read_offset) + ")");
    }
    h.on_disk -= got;
    on_disk -= got;
    in_memory += got;
    if (h.on_disk == 0) {
      // Drained: the next spill starts a new file. This one is removed later
      // (RemoveDrained), never while a checkpoint writer may read it.
      drained.push_back(h.spill_path);
      h.spill_path.clear();
      h.read_offset = 0;
      if (h.write_buf.empty()) h.disk_min_depth = UINT32_MAX;
    }
    return Status::Ok();
  }

  // Frees the lease's connection slot; returns its host, or nullopt for a
  // lease this frontier did not hand out (ignored). REQUIRES: mu held.
  std::optional<size_t> EndLease(const Lease& lease) REQUIRES(mu) {
    auto it = leased.find(lease.id);
    if (it == leased.end()) return std::nullopt;
    size_t id = it->second.first;
    leased.erase(it);
    --hosts[id].in_flight;
    --in_flight;
    return id;
  }

  double UsualDelay(const Host& h, double response_s) const {
    return std::max({options.min_delay_s,
                     std::min(h.crawl_delay_s, options.max_crawl_delay_s),
                     options.response_factor * response_s});
  }
  double DelayAfterFetch(const Host& h, double response_s) const {
    return h.backoff.Wait(UsualDelay(h, response_s), options);
  }

  // The host's back-off takes `signal`; then the host waits its delay after
  // the fetch that ended at `now`.
  void AfterFetch(Host& h, Clock::time_point now, double response_s, HostSignal signal) {
    h.backoff.On(signal, UsualDelay(h, response_s), options);
    h.due = std::max(
        h.due, now + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(DelayAfterFetch(h, response_s))));
  }
};

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
  return std::unique_ptr<Frontier>(new Frontier(std::make_unique<Impl>(options)));
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
    Status st = impl_->Push(std::move(entries[i]), &out.new_hosts);
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
  impl_->Unschedule(id);
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
  if (m.schedule.empty()) return std::optional<Lease>();
  auto [due, id] = *m.schedule.begin();
  if (due > now) {
    if (next_due != nullptr) *next_due = due;
    return std::optional<Lease>();
  }
  m.Unschedule(id);
  Impl::Host& h = m.hosts[id];
  if (h.DiskFirst()) {
    Status st = m.Refill(h);
    if (!st.ok()) return st;
  }
  Lease lease{h.PopRam(), h.key, m.next_lease++};
  m.CountDepth(lease.entry.depth, -1);
  m.leased.emplace(lease.id, std::make_pair(id, lease.entry));
  --m.in_memory;
  ++h.in_flight;
  ++m.in_flight;
  // Request starts to one host are at least min_delay apart.
  h.due =
      std::max(h.due, now + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(m.options.min_delay_s)));
  m.MaybeSchedule(id);
  return std::optional<Lease>(std::move(lease));
}

void Frontier::Done(const Lease& lease, Clock::time_point now, double response_s,
                    HostSignal signal) {
  Impl& m = *impl_;
  MutexLock lock(m.mu);
  std::optional<size_t> id = m.EndLease(lease);
  if (!id) return;
  Impl::Host& h = m.hosts[*id];
  m.Unschedule(*id);
  m.AfterFetch(h, now, response_s, signal);
  m.MaybeSchedule(*id);
}

void Frontier::Release(const Lease& lease) {
  MutexLock lock(impl_->mu);
  std::optional<size_t> id = impl_->EndLease(lease);
  if (id) impl_->MaybeSchedule(*id);
}

Status Frontier::Retry(const Lease& lease, Clock::time_point now, double response_s,
                       Clock::time_point until, HostSignal signal) {
  Impl& m = *impl_;
  MutexLock lock(m.mu);
  auto it = m.leased.find(lease.id);
  if (it == m.leased.end()) return Status::Ok();
  UrlEntry entry = it->second.second;
  ++entry.attempt;
  std::optional<size_t> id = m.EndLease(lease);
  Impl::Host& h = m.hosts[*id];
  m.Unschedule(*id);
  m.AfterFetch(h, now, response_s, signal);
  bool hold_host =
      signal == HostSignal::kOverloaded || signal == HostSignal::kUnreachable;
  if (hold_host || h.Queued() == 0) h.due = std::max(h.due, until);
  return m.Push(std::move(entry), nullptr);  // schedules the host again
}

void Frontier::Defer(const Lease& lease, Clock::time_point until) {
  Impl& m = *impl_;
  MutexLock lock(m.mu);
  auto it = m.leased.find(lease.id);
  if (it == m.leased.end()) return;
  UrlEntry entry = it->second.second;
  std::optional<size_t> id = m.EndLease(lease);
  Impl::Host& h = m.hosts[*id];
  m.Unschedule(*id);
  m.CountDepth(entry.depth, 1);
  h.ram[entry.depth].push_front(std::move(entry));
  ++h.ram_size;
  ++m.in_memory;
  h.due = std::max(h.due, until);
  m.MaybeSchedule(*id);
}

bool Frontier::Parked(std::string_view host) const {
  const Impl& m = *impl_;
  MutexLock lock(m.mu);
  auto it = m.host_index.find(std::string(host));
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
      bool ready = h.due <= now && h.in_flight < m.options.max_connections_per_host;
      ++(ready ? s.hosts_ready : s.hosts_waiting_politeness);
    }
  }
  return s;
}

Status Frontier::ForEachEntry(
    Clock::time_point now, const std::function<Status(const HostImage&)>& host,
    const std::function<Status(const UrlEntry&, bool leased)>& url) const {
  const Impl& m = *impl_;
  MutexLock lock(m.mu);
  for (const Impl::Host& h : m.hosts) {
    HostImage image{h.key, h.open, h.crawl_delay_s,
                    std::chrono::duration<double>(h.due - now).count()};
    Status st = host(image);
    if (!st.ok()) return st;
  }
  for (const auto& [lease_id, leased] : m.leased) {
    Status st = url(leased.second, true);
    if (!st.ok()) return st;
  }
  for (const Impl::Host& h : m.hosts) {
    for (const auto& [depth, fifo] : h.ram) {
      for (const UrlEntry& e : fifo) {
        Status st = url(e, false);
        if (!st.ok()) return st;
      }
    }
    if (h.on_disk > 0) {
      std::FILE* f = std::fopen(h.spill_path.c_str(), "rb");
      if (f == nullptr) return IoError(h.spill_path, "open");
      std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(f, &std::fclose);
      if (std::fseek(f, static_cast<long>(h.read_offset), SEEK_SET) != 0)
        return IoError(h.spill_path, "seek");
      for (uint64_t i = 0; i < h.on_disk; ++i) {
        UrlEntry e;
        uint64_t bytes = 0;
        if (!ReadSpillRecord(f, &e, &bytes)) {
          return Status::Error(
              Status::Code::kCorruption,
              h.spill_path + ": spill file ends early (" + std::to_string(h.on_disk) +
                  " records expected from offset " + std::to_string(h.read_offset) + ")");
        }
        Status st = url(e, false);
        if (!st.ok()) return st;
      }
    }
    for (const UrlEntry& e : h.write_buf) {
      Status st = url(e, false);
      if (!st.ok()) return st;
    }
  }
  return Status::Ok();
}

void Frontier::RestoreHost(const HostImage& image, Clock::time_point now) {
  MutexLock lock(impl_->mu);
  size_t id = impl_->HostFor(image.key, nullptr);
  impl_->Unschedule(id);
  Impl::Host& h = impl_->hosts[id];
  h.open = image.open;
  h.crawl_delay_s = image.crawl_delay_s;
  h.due = now + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(std::max(0.0, image.due_in_s)));
  impl_->MaybeSchedule(id);
}

Status Frontier::Requeue(UrlEntry entry) {
  MutexLock lock(impl_->mu);
  return impl_->Push(std::move(entry), nullptr);
}

uint64_t Frontier::DropHosts(const std::function<bool(std::string_view)>& handed) {
  Impl& m = *impl_;
  MutexLock lock(m.mu);
  uint64_t dropped = 0;
  for (size_t id = 0; id < m.hosts.size(); ++id) {
    Impl::Host& h = m.hosts[id];
    if (h.Queued() == 0 || !handed(h.key)) continue;
    m.Unschedule(id);
    for (const auto& [depth, fifo] : h.ram)
      m.CountDepth(depth, -static_cast<int64_t>(fifo.size()));
    for (const UrlEntry& e : h.write_buf) m.CountDepth(e.depth, -1);
    if (h.on_disk > 0) {
      // The spilled records' depths are not in RAM: read them for the count.
      std::FILE* f = std::fopen(h.spill_path.c_str(), "rb");
      if (f != nullptr &&
          std::fseek(f, static_cast<long>(h.read_offset), SEEK_SET) == 0) {
        UrlEntry e;
        uint64_t bytes = 0;
        for (uint64_t i = 0; i < h.on_disk && ReadSpillRecord(f, &e, &bytes); ++i)
          m.CountDepth(e.depth, -1);
      }
      if (f != nullptr) std::fclose(f);
      m.drained.push_back(h.spill_path);
      h.spill_path.clear();
      h.read_offset = 0;
    }
    dropped += h.Queued();
    m.in_memory -= h.ram_size + h.write_buf.size();
    m.buffered -= h.write_buf.size();
    m.on_disk -= h.on_disk;
    h.ram.clear();
    h.ram_size = 0;
    h.write_buf.clear();
    h.on_disk = 0;
    h.disk_min_depth = UINT32_MAX;
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
