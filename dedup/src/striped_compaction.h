// Part of striped_filter.h: StripedFilter's hash log and compaction members
// (the design is in filter.h, "The hash log and compaction").
//
// Locks, outermost first: compact_mu_ (one compaction at a time), pause_mu_
// (held across each step that takes a stripe lock, so PauseCompaction can
// keep the compactor away from the stripes across a fork), a stripe's mu.
// A compaction never holds a stripe lock while it reads the bulk of the log
// or waits for readers.
#ifndef DEDUP_STRIPED_COMPACTION_H_
#define DEDUP_STRIPED_COMPACTION_H_

#include <chrono>
#include <filesystem>

#include "striped_filter.h"

namespace crawler::dedup::internal {

template <typename Layer>
Status StripedFilter<Layer>::StartLog(const std::string& dir, double compact_growth,
                                      std::function<void(const std::string&)> warn,
                                      std::span<const uint64_t> log_bytes) {
  if (log_started_)
    return Status::Error(Status::Code::kInvalidArgument,
                         dir + ": the filter's hash log was started already");
  if (!(compact_growth == 0 || (compact_growth >= 1.1 && compact_growth <= 16)))
    return Status::Error(Status::Code::kInvalidArgument,
                         "compact_growth " + std::to_string(compact_growth) +
                             " is not 0 (never) or in [1.1, 16]");
  if (!log_bytes.empty() && log_bytes.size() != options_.stripes)
    return Status::Error(Status::Code::kInvalidArgument,
                         std::to_string(log_bytes.size()) + " hash log lengths for " +
                             std::to_string(options_.stripes) + " stripes");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Status::Error(Status::Code::kIoError,
                         dir + ": cannot create the hash log directory: " + ec.message());
  log_started_ = true;
  growth_ = compact_growth;
  warn_ = std::move(warn);
  const bool compacting = growth_ > 0 && options_.scaling;
  const auto type = static_cast<uint32_t>(TypeOf<Layer>());
  std::string problems;
  uint32_t unlogged = 0;
  for (uint32_t i = 0; i < options_.stripes; ++i) {
    Stripe& s = stripes_[i];
    SpinLockGuard lock(s.mu);
    const uint64_t entries = s.inserts_new + s.erases;
    auto log = entries == 0 ? HashLog::Create(dir, i, options_.stripes, type)
                            : HashLog::Adopt(dir, i, options_.stripes, type, entries,
                                             log_bytes.empty() ? 0 : log_bytes[i]);
    if (!log.ok()) {
      if (unlogged++ < 3)
        problems += (problems.empty() ? "" : "; ") + log.status().message();
      continue;
    }
    s.log = std::move(*log);
    if (!compacting) continue;
    if (entries == 0 && s.layers.size() == 1 && s.layers[0].items() == 0 && !s.rebuilt) {
      // An empty stripe starts as if rebuilt: its first layer at the rebuilt
      // share of the error (0.8 e: ~10.4 bits/key at 1%), not a chain's
      // first share (e (1 - r): ~14.4), since the compactor, not the chain,
      // will carry its growth. Not shared yet (StartLog comes first).
      const uint64_t capacity = s.layers[0].capacity();
      s.layers.clear();
      s.views.clear();
      s.layers.emplace_back(capacity, kRebuiltErrorShare * options_.error_rate);
      Publish(s);
      s.rebuilt = true;
    }
    s.compact_at = static_cast<uint64_t>(kCompactAtFill *
                                         static_cast<double>(s.layers[0].capacity()));
    if (s.layers.size() > 1 || s.layers.back().items() >= s.compact_at)
      s.due.store(true, std::memory_order_relaxed);
  }
  if (unlogged > 0 && warn_) {
    warn_(std::to_string(unlogged) + " of " + std::to_string(options_.stripes) +
          " dedup stripes have no usable hash log and will not be compacted (they "
          "lose nothing; their chains just stay as grown): " +
          problems + (unlogged > 3 ? "; ..." : ""));
  }
  if (compacting) compactor_ = std::thread([this] { CompactorLoop(); });
  return Status::Ok();
}

template <typename Layer>
std::vector<uint64_t> StripedFilter<Layer>::FlushLog() {
  std::vector<uint64_t> bytes(options_.stripes, 0);
  for (uint32_t i = 0; i < options_.stripes; ++i) {
    Stripe& s = stripes_[i];
    SpinLockGuard lock(s.mu);
    if (!s.log) continue;
    s.log->Flush();
    if (s.log->ok()) bytes[i] = s.log->flushed_bytes();
  }
  return bytes;
}

// No lock: a forked child has no other threads, and s.log is set once, by
// StartLog, before any checkpoint.
template <typename Layer>
Status StripedFilter<Layer>::SyncLog() const NO_THREAD_SAFETY_ANALYSIS {
  for (uint32_t i = 0; i < options_.stripes; ++i) {
    const HashLog* log = stripes_[i].log.get();
    if (log == nullptr) continue;
    Status st = log->Sync();
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

template <typename Layer>
uint64_t StripedFilter<Layer>::RebuiltCapacity(uint64_t items) const {
  const double growth = growth_ > 0 ? growth_ : 1.25;
  return std::max<uint64_t>(
      64, static_cast<uint64_t>(std::ceil(static_cast<double>(items) * growth)));
}

template <typename Layer>
void StripedFilter<Layer>::Fail(Stripe& s, const std::string& why) {
  s.log->Disable(why);
  s.compact_at = UINT64_MAX;
  compaction_failures_.fetch_add(1, std::memory_order_relaxed);
  if (warn_) warn_("dedup compaction stopped for one stripe: " + why);
}

// The chain becomes [fresh]; the old layers and views go to `old`, to be
// freed after a grace period.
template <typename Layer>
void StripedFilter<Layer>::SwapIn(Stripe& s, Layer fresh, Retired* old) {
  const uint64_t capacity = fresh.capacity();
  old->layers = std::move(s.layers);
  old->views = std::move(s.views);
  s.layers = std::deque<Layer>();
  s.views.clear();
  s.layers.push_back(std::move(fresh));
  Publish(s);
  s.rebuilt = true;
  s.fpr_layers = 0;  // recompute the cached FPR
  if (s.log && s.log->ok() && growth_ > 0) {
    s.compact_at = static_cast<uint64_t>(kCompactAtFill * static_cast<double>(capacity));
  }
  s.due.store(false, std::memory_order_relaxed);
  ++s.compactions;
}

// A rebuild's first phase, under the stripe's lock: the log flushed, its
// length (`*upto`) and the new layer's capacity. Null: nothing to do (the
// stripe is not logged, or a failed write stopped its log: reported here,
// once).
template <typename Layer>
HashLog* StripedFilter<Layer>::CompactionStart(Stripe& s, uint64_t* upto,
                                               uint64_t* capacity) {
  std::lock_guard<std::mutex> pause(pause_mu_);
  SpinLockGuard lock(s.mu);
  if (!s.log) return nullptr;
  if (!s.log->ok()) {
    // A write failed (a full disk): the log stopped itself, unreported.
    if (s.compact_at != UINT64_MAX) {
      s.compact_at = UINT64_MAX;
      s.due.store(false, std::memory_order_relaxed);
      compaction_failures_.fetch_add(1, std::memory_order_relaxed);
      if (warn_) warn_("dedup compaction stopped for one stripe: " + s.log->error());
    }
    return nullptr;
  }
  HashLog* log = s.log.get();
  log->Flush();
  *upto = log->flushed_bytes();
  uint64_t items = 0;
  for (const Layer& layer : s.layers) items += layer.items();
  *capacity = RebuiltCapacity(items);
  // A cuckoo layer refuses keys past its room, and the log replays every
  // add before the erases that follow it: room for all of them.
  if (TypeOf<Layer>() == FilterType::kCuckoo)
    *capacity = std::max(*capacity, s.inserts_new + s.inserts_new / 16);
  return log;
}

template <typename Layer>
Status StripedFilter<Layer>::CompactFromLog(uint32_t index) {
  std::lock_guard<std::mutex> one(compact_mu_);
  const auto t0 = std::chrono::steady_clock::now();
  Stripe& s = stripes_[index];
  uint64_t upto = 0, capacity = 0;
  HashLog* log = CompactionStart(s, &upto, &capacity);
  if (log == nullptr) return Status::Ok();
  // The build: the log as it was, without the stripe's lock. The new layer
  // gets each key once per log entry (Add, not AddIfAbsent: a later erase
  // must find the key's own copy).
  Layer fresh(capacity, kRebuiltErrorShare * options_.error_rate);
  const uint64_t bytes = fresh.Bytes();
  building_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  uint64_t saturations = 0, applied = 0;
  bool overflow = false;
  auto apply = [&](const LogEntry* e, size_t n) {
    applied += n;
    constexpr size_t kAhead = 8;
    for (size_t i = 0; i < std::min(n, kAhead); ++i) fresh.Prefetch(e[i].hash);
    for (size_t i = 0; i < n; ++i) {
      if (i + kAhead < n) fresh.Prefetch(e[i + kAhead].hash);
      if (e[i].erase) {
        fresh.Remove(e[i].hash);
      } else if (TypeOf<Layer>() == FilterType::kCuckoo && fresh.Full()) {
        overflow = true;
      } else {
        fresh.Add(e[i].hash, &saturations);
      }
    }
  };
  Status st = log->ReadRange(HashLog::kHeaderBytes, upto, apply);
  Retired old;
  {
    std::lock_guard<std::mutex> pause(pause_mu_);
    SpinLockGuard lock(s.mu);
    // What was logged meanwhile, under the lock: after this the new layer
    // holds every key the chain does.
    log->Flush();
    // A write that failed (a full disk) during the build dropped the entries
    // it held: the log no longer has every key the chain does, and a swap
    // would forget them (found by output_failure_test: 79 pages fetched
    // twice).
    if (st.ok() && !log->ok()) st = Status::Error(Status::Code::kIoError, log->error());
    if (st.ok()) st = log->ReadRange(upto, log->flushed_bytes(), apply);
    // The log must hold exactly the stripe's entries (a resume adopts a log
    // by its recorded length, unread: this is where a wrong one shows).
    if (st.ok() && applied != s.inserts_new + s.erases) {
      st = Status::Error(Status::Code::kCorruption,
                         log->path() + ": holds " + std::to_string(applied) +
                             " entries, the stripe " +
                             std::to_string(s.inserts_new + s.erases));
    }
    if (!st.ok()) {
      Fail(s, st.message());
    } else if (!overflow) {
      SwapIn(s, std::move(fresh), &old);
    }
    // else: a cuckoo layer too small for the keys that arrived during the
    // build. Nothing is wrong with the log; the stripe stays due and the
    // next try sizes for the keys it then holds.
  }
  building_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
  epochs_.WaitForReaders();
  old = Retired();  // free the old chain: no lookup can see it now
  SpinLockGuard lock(s.mu);
  s.compaction_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

template <typename Layer>
Status StripedFilter<Layer>::CompactAll() {
  Status first;
  for (uint32_t i = 0; i < options_.stripes; ++i) {
    Status st = CompactFromLog(i);
    if (first.ok() && !st.ok()) first = st;
  }
  return first;
}

template <typename Layer>
Status StripedFilter<Layer>::Compact(
    const std::function<void(const std::function<void(std::string_view)>&)>&
        for_each_key) {
  for (uint32_t i = 0; i < options_.stripes; ++i) {
    std::lock_guard<std::mutex> one(compact_mu_);
    const auto t0 = std::chrono::steady_clock::now();
    Stripe& s = stripes_[i];
    Retired old;
    {
      std::lock_guard<std::mutex> pause(pause_mu_);
      SpinLockGuard lock(s.mu);
      uint64_t items = 0;
      for (const Layer& layer : s.layers) items += layer.items();
      Layer fresh(RebuiltCapacity(items), kRebuiltErrorShare * options_.error_rate);
      uint64_t saturations = 0;
      bool overflow = false;
      for_each_key([&](std::string_view key) {
        const KeyHash h = HashKey(key);
        if (StripeOf(h, stripe_bits_) != i) return;
        if (TypeOf<Layer>() == FilterType::kCuckoo && fresh.Full()) {
          overflow = true;
        } else {
          fresh.Add(h, &saturations);
        }
      });
      if (overflow)
        return Status::Error(Status::Code::kOutOfRange,
                             "compact: the rebuilt cuckoo layer of stripe " +
                                 std::to_string(i) + " overflowed (more keys than " +
                                 "the filter holds?); this stripe and later ones "
                                 "are unchanged");
      SwapIn(s, std::move(fresh), &old);
    }
    epochs_.WaitForReaders();
    old = Retired();
    SpinLockGuard lock(s.mu);
    s.compaction_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return Status::Ok();
}

template <typename Layer>
void StripedFilter<Layer>::CompactorLoop() {
  while (!stop_) {
    for (uint32_t i = 0; i < options_.stripes && !stop_; ++i) {
      if (stripes_[i].due.load(std::memory_order_relaxed)) {
        Status st = CompactFromLog(i);  // a failure is reported by Fail
        (void)st;
      }
    }
    std::unique_lock<std::mutex> lock(wake_mu_);
    // A missed notify (InsertLocked does not take wake_mu_) costs at most
    // this long.
    if (!stop_) wake_.wait_for(lock, std::chrono::milliseconds(50));
  }
}

template <typename Layer>
void StripedFilter<Layer>::StopCompactor() {
  {
    std::lock_guard<std::mutex> lock(wake_mu_);  // not between its check and wait
    stop_.store(true);
  }
  wake_.notify_all();
  if (compactor_.joinable()) compactor_.join();
}

}  // namespace crawler::dedup::internal

#endif  // DEDUP_STRIPED_COMPACTION_H_
