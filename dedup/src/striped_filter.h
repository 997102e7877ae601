// StripedFilter<Layer>: the one implementation of Filter, instantiated for
// the three layer types (filter.cc). See filter.h for the design; format.h
// for the bytes.
#ifndef DEDUP_STRIPED_FILTER_H_
#define DEDUP_STRIPED_FILTER_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "bloom_impl.h"
#include "cuckoo_impl.h"
#include "dedup/filter.h"
#include "format.h"
#include "hash_log.h"
#include "read_epochs.h"
#include "spin_lock.h"

namespace crawler::dedup::internal {

// A stripe never holds more layers than this; with expansion >= 1.1 and
// capacity <= 2^40 a chain can not legitimately get there.
constexpr uint32_t kMaxLayers = 400;
// Batches: keys hashed and grouped per round (1024 keys over 64 stripes: 16
// keys, i.e. 16 overlapped misses, per lock); above this many stripes the
// groups get too small to pay for the sort and batches go key by key.
constexpr size_t kChunk = 1024;
constexpr uint32_t kMaxGroupedStripes = 256;
// Prefetched layer blocks kept in flight ahead of the key being processed.
constexpr uint32_t kPrefetchLines = 16;
// Compaction (filter.h): a rebuilt layer's share of the error budget, and
// the fill of it at which the stripe is rebuilt again.
constexpr double kRebuiltErrorShare = 0.8;
constexpr double kCompactAtFill = 0.95;

template <typename Layer>
constexpr FilterType TypeOf() {
  if constexpr (std::is_same_v<Layer, BloomLayer>) return FilterType::kBloom;
  if constexpr (std::is_same_v<Layer, CountingLayer>) return FilterType::kCounting;
  return FilterType::kCuckoo;
}

template <typename Layer>
class StripedFilter final : public Filter {
 public:
  // `empty`: leave every stripe without layers (Read fills them in).
  StripedFilter(const FilterOptions& options, bool empty)
      : options_(options),
        stripe_bits_(static_cast<unsigned>(std::countr_zero(options.stripes))),
        stripes_(new Stripe[options.stripes]) {
    // Setup: the stripes are not shared yet.
    if (empty) return;
    for (uint32_t i = 0; i < options_.stripes; ++i) {
      Stripe& s = stripes_[i];
      s.layers.emplace_back(FirstCapacity(), LayerError(0));
      Publish(s);
    }
  }
  ~StripedFilter() override { StopCompactor(); }

  InsertResult TryInsertHash(const KeyHash& h) override {
    Stripe& s = stripes_[StripeOf(h, stripe_bits_)];
    {
      ReadEpochs::Guard reading(epochs_);
      PrefetchUnlocked(s, h);
    }
    SpinLockGuard lock(s.mu);
    return InsertLocked(s, h);
  }
  InsertResult RestoreHash(const KeyHash& h) override {
    Stripe& s = stripes_[StripeOf(h, stripe_bits_)];
    SpinLockGuard lock(s.mu);
    return InsertLocked(s, h, /*count_expected=*/false);
  }

  void InsertBatch(std::span<const std::string_view> keys,
                   std::span<InsertResult> out) override {
    // Called with s.mu held (the analysis cannot follow the template call).
    ForEachGroupedByStripe(
        keys, [&](Stripe& s, const KeyHash& h, size_t i)
                  NO_THREAD_SAFETY_ANALYSIS { out[i] = InsertLocked(s, h); });
  }

  void ContainsBatch(std::span<const std::string_view> keys,
                     std::span<bool> out) const override {
    if constexpr (std::is_same_v<Layer, CuckooLayer>) {
      // Locked per stripe group: a cuckoo lookup without the lock costs more
      // instructions per layer (atomic word pairs, the seqlock's checks), and
      // batched lookups on a 7-layer chain ran at 65% of this path's rate.
      // Called with s.mu held (the analysis cannot follow the template call).
      ForEachGroupedByStripe(
          keys, [&](const Stripe& s, const KeyHash& h, size_t i)
                    NO_THREAD_SAFETY_ANALYSIS { out[i] = ContainsLocked(s, h); });
    } else {
      ContainsBatchLockFree(keys, out);
    }
  }

  bool ContainsHash(const KeyHash& h) const override {
    const Stripe& s = stripes_[StripeOf(h, stripe_bits_)];
    ReadEpochs::Guard reading(epochs_);
    const View& v = *s.view.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < v.n; ++i) {
      if (v.at[i]->Contains(h)) return true;
    }
    return false;
  }

  bool EraseHash(const KeyHash& h) override {
    if (!options_.allow_erase) return false;
    Stripe& s = stripes_[StripeOf(h, stripe_bits_)];
    SpinLockGuard lock(s.mu);
    // Oldest first: an inserted key lives in the oldest layer that contains it
    // (it was absent from all older ones when added, and they only shrink
    // since), while a newer layer may hold a fingerprint twin of it.
    for (size_t i = 0; i < s.layers.size(); ++i) {
      if (s.layers[i].Remove(h)) {
        ++s.erases;
        if (s.log) s.log->Append(h, /*erase=*/true);
        return true;
      }
    }
    return false;
  }

  FilterStats Stats() const override {
    FilterStats t;
    t.type = TypeOf<Layer>();
    t.options = options_;
    t.stripes = options_.stripes;
    t.fpr_bound = options_.error_rate;
    t.layers_min = UINT32_MAX;
    double fill_weighted = 0, fpr_sum = 0;
    uint64_t cells_capacity = 0;
    for (uint32_t i = 0; i < options_.stripes; ++i) {
      StripeStats st = StatsOf(stripes_[i]);
      t.layers_min = std::min(t.layers_min, st.layers);
      t.layers_max = std::max(t.layers_max, st.layers);
      t.items += st.items;
      t.capacity += st.capacity;
      t.bytes += st.bytes;
      fill_weighted += st.fill * static_cast<double>(st.capacity);
      cells_capacity += st.capacity;
      fpr_sum += st.estimated_fpr;
      t.inserts_new += st.inserts_new;
      t.inserts_duplicate += st.inserts_duplicate;
      t.inserts_full += st.inserts_full;
      t.erases += st.erases;
      t.relocations += st.relocations;
      t.saturations += st.saturations;
      t.expected_false_positives += st.expected_false_positives;
      t.saturated_stripes += st.saturated ? 1 : 0;
      t.compactions += st.compactions;
      t.compaction_seconds += st.compaction_seconds;
      t.logged_stripes += st.logged ? 1 : 0;
      t.log_buffer_bytes += st.log_buffer_bytes;
      t.per_stripe.push_back(st);
    }
    t.bytes += building_bytes_.load(std::memory_order_relaxed);
    t.compaction_failures = compaction_failures_.load(std::memory_order_relaxed);
    t.fill = cells_capacity ? fill_weighted / static_cast<double>(cells_capacity) : 0;
    t.estimated_fpr = fpr_sum / options_.stripes;
    t.bits_per_item =
        t.items ? 8.0 * static_cast<double>(t.bytes) / static_cast<double>(t.items) : 0;
    return t;
  }

  const FilterOptions& options() const override { return options_; }

  Status Write(std::FILE* out, const std::string& name) const override {
    return WriteImpl(out, name, false);
  }
  Status WriteFrozen(std::FILE* out, const std::string& name) const override {
    return WriteImpl(out, name, true);
  }

  // The file (format.h), in striped_io.h. frozen: no other thread uses the
  // filter; write each layer straight from its memory.
  Status WriteImpl(std::FILE* out, const std::string& name, bool frozen) const;
  // Reads stripe `index` from its STRP section, each layer's data straight
  // into its table; then the section's checksum. On any error the caller
  // drops the whole filter. Setup only: the filter is not shared yet.
  Status ReadStripe(uint32_t index, SectionReader* in, const std::string& name,
                    uint64_t* items);

 private:
  Status DecodeStripe(uint32_t index, SectionReader* in, const std::string& name,
                      uint64_t* items) NO_THREAD_SAFETY_ANALYSIS;

  // Lock-free reads. Cells and slots are written under the stripe lock with
  // relaxed atomic stores and read with relaxed atomic loads (bloom_impl.h,
  // cuckoo_impl.h; plain moves on x86). A lookup needs no lock: a key
  // inserted before the lookup began has its cells set (its fingerprint
  // stored) in a layer the lookup sees (stored before the insert returns; a
  // new layer is published with a release store after it is built). A cuckoo
  // relocation moves a fingerprint between buckets; its seqlock makes a
  // lookup that overlapped one read again (cuckoo_impl.h).

  // What a lock-free reader sees of a stripe's chain: the first n layers.
  // Immutable once published; replaced (never freed before the filter) when
  // a layer is added. Layers live in a deque: appending moves none.
  struct View {
    uint32_t n = 0;
    std::unique_ptr<const Layer*[]> at;
  };

  struct alignas(64) Stripe {
    // Written by every insert: one cache line, so an insert on the other core
    // moves one line of the stripe, not three (2-thread single-key inserts
    // measured 9.6 Mops/s with the view pointer beside the lock).
    mutable SpinLock mu;
    uint64_t inserts_new GUARDED_BY(mu) = 0;
    uint64_t inserts_duplicate GUARDED_BY(mu) = 0;
    uint64_t inserts_full GUARDED_BY(mu) = 0;
    uint64_t erases GUARDED_BY(mu) = 0;
    uint64_t saturations GUARDED_BY(mu) = 0;
    // The expected false positives: each new key adds the stripe's FPR at its
    // check (FprLocked; not saved with the filter).
    double expected_false GUARDED_BY(mu) = 0;
    // Read by every insert and lookup, written when layers change.
    alignas(64) std::atomic<const View*> view{nullptr};  // the newest in `views`
    std::deque<Layer> layers GUARDED_BY(mu);             // oldest first, never empty
    std::vector<std::unique_ptr<View>> views GUARDED_BY(mu);
    double fpr GUARDED_BY(mu) =
        0;  // cached: at fpr_layers layers, fpr_items in the newest
    size_t fpr_layers GUARDED_BY(mu) = 0;
    uint64_t fpr_items GUARDED_BY(mu) = 0;
    // Compaction. The log, once StartLog set it, stays for the filter's life
    // (Disable stops it).
    std::unique_ptr<HashLog> log GUARDED_BY(mu);
    uint64_t compact_at GUARDED_BY(mu) = UINT64_MAX;  // newest layer's items
    bool rebuilt GUARDED_BY(mu) = false;              // layers[0] is a rebuilt layer
    std::atomic<bool> due{false};
    uint64_t compactions GUARDED_BY(mu) = 0;
    double compaction_seconds GUARDED_BY(mu) = 0;
  };

  // The stripe's estimated FPR now, recomputed when a layer was added or the
  // newest layer's items moved by 1/64 of its capacity (the estimate's
  // Poisson sums are too dear for every key; within 1/64 of a fill, a
  // layer's FPR changes by a few percent of itself at most).
  static double FprLocked(Stripe& s) REQUIRES(s.mu) {
    const Layer& newest = s.layers.back();
    const uint64_t step = std::max<uint64_t>(1, newest.capacity() / 64);
    const uint64_t items = newest.items();
    if (s.layers.size() != s.fpr_layers || items >= s.fpr_items + step ||
        items + step <= s.fpr_items) {
      double pass = 1;
      for (const Layer& layer : s.layers) pass *= 1 - layer.EstimatedFpr();
      s.fpr = 1 - pass;
      s.fpr_layers = s.layers.size();
      s.fpr_items = items;
    }
    return s.fpr;
  }

  // Publishes the stripe's layers to lock-free readers.
  static void Publish(Stripe& s) REQUIRES(s.mu) {
    auto v = std::make_unique<View>();
    v->n = static_cast<uint32_t>(s.layers.size());
    v->at = std::make_unique<const Layer*[]>(v->n);
    for (uint32_t i = 0; i < v->n; ++i) v->at[i] = &s.layers[i];
    s.view.store(v.get(), std::memory_order_release);
    s.views.push_back(std::move(v));
  }

  // Starts loading the key's blocks before the lock is taken. The lock's
  // atomic exchange waits for every earlier store to reach the cache (x86),
  // and no later load may start before it, so without this one key's miss
  // could not overlap the previous key's: single-key inserts ran at half a
  // plain Bloom filter's rate. Reads only immutable layer geometry.
  static void PrefetchUnlocked(const Stripe& s, const KeyHash& h) {
    PrefetchView(*s.view.load(std::memory_order_acquire), h);
  }
  static void PrefetchView(const View& v, const KeyHash& h) {
    for (uint32_t i = 0; i < v.n; ++i) v.at[i]->Prefetch(h);
  }

  // ContainsBatch without locks: hash a chunk, then probe in input order with
  // a sliding prefetch window over each key's blocks.
  void ContainsBatchLockFree(std::span<const std::string_view> keys,
                             std::span<bool> out) const {
    std::array<KeyHash, 256> hashes;
    std::array<const View*, 256> views;
    const size_t ahead = kPrefetchLines;
    ReadEpochs::Guard reading(epochs_);
    for (size_t base = 0; base < keys.size(); base += hashes.size()) {
      const size_t n = std::min(hashes.size(), keys.size() - base);
      for (size_t i = 0; i < n; ++i) {
        hashes[i] = HashKey(keys[base + i]);
        views[i] = stripes_[StripeOf(hashes[i], stripe_bits_)].view.load(
            std::memory_order_acquire);
      }
      for (size_t i = 0; i < std::min(n, ahead); ++i) PrefetchView(*views[i], hashes[i]);
      for (size_t i = 0; i < n; ++i) {
        if (i + ahead < n) PrefetchView(*views[i + ahead], hashes[i + ahead]);
        bool found = false;
        for (uint32_t l = 0; l < views[i]->n && !found; ++l)
          found = views[i]->at[l]->Contains(hashes[i]);
        out[base + i] = found;
      }
    }
  }

  static Status Corrupt(const std::string& msg) {
    return Status::Error(Status::Code::kCorruption, msg);
  }

  // capacity/S plus 4 standard deviations of the binomial spread of keys over
  // stripes, so a filter created for N keys holds N keys without growing
  // (and a fixed one without refusing): 4/sqrt(N/S) extra, 1% at N = 10^7.
  uint64_t FirstCapacity() const {
    uint64_t base = std::max<uint64_t>(
        1, (options_.capacity + options_.stripes - 1) / options_.stripes);
    if (options_.stripes == 1) return base;
    return base +
           static_cast<uint64_t>(std::ceil(4 * std::sqrt(static_cast<double>(base))));
  }
  // The next layer of a stripe's chain. While a stripe waits for the
  // compactor (or for good, if it has no log) its one layer is followed by
  // one of (compact_growth - 1) / 2 x it (at least 1/16), not expansion x
  // it: the big follower would be thrown away by the rebuild soon after
  // (measured: 23.6 bits/key at the first round of rebuilds, dedup_bench
  // --compact 1.25 --trace). Half of g - 1, not all of it: a follower gets
  // what is left of the error budget after the rebuilt layer's 0.8 share
  // (0.03 e, ~18 bits a key of room), and when all stripes wait at the first
  // round the full-size ones peaked at 14.2 bits/key (10^8 from 10^6, g =
  // 1.25; 12.9 with half). A stripe that fills its follower gets another
  // (expansion x it). Then it grows as any chain. A chain that starts with a
  // rebuilt layer shares what that layer left of the error budget as a
  // chain shares all of it (for a chain never rebuilt the formulas agree).
  uint64_t NextCapacity(const Stripe& s) const REQUIRES(s.mu) {
    double base = static_cast<double>(s.layers.back().capacity()) * options_.expansion;
    const bool compacting = growth_ > 0 && s.compact_at != UINT64_MAX;
    if ((s.rebuilt || compacting) && s.layers.size() == 1) {
      base = static_cast<double>(s.layers[0].capacity()) *
             std::max((growth_ - 1) / 2, 0.0625);
    }
    return std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(base)));
  }
  double NextError(const Stripe& s) const REQUIRES(s.mu) {
    if (!s.rebuilt) return LayerError(s.layers.size());
    double used = 0;
    for (const Layer& layer : s.layers) used += layer.error();
    return std::max(options_.error_rate - used, options_.error_rate * 1e-4) *
           (1 - options_.tightening);
  }

  // e_i = e (1 - r) r^i, so that sum over all i is e.
  double LayerError(size_t i) const {
    if (!options_.scaling) return options_.error_rate;
    return options_.error_rate * (1 - options_.tightening) *
           std::pow(options_.tightening, static_cast<double>(i));
  }

  // Hashes a chunk of keys, groups them by stripe (a stable counting sort),
  // then per stripe: takes the lock once, prefetches every probed line of the
  // group, and calls op(stripe, hash, index) for each key in input order.
  // One lock round trip and one overlapped wave of cache misses per group
  // instead of one serialised miss per key.
  template <typename Op>
  void ForEachGroupedByStripe(std::span<const std::string_view> keys, Op op) const {
    if (options_.stripes > kMaxGroupedStripes) {
      for (size_t i = 0; i < keys.size(); ++i) {
        KeyHash h = HashKey(keys[i]);
        Stripe& s = stripes_[StripeOf(h, stripe_bits_)];
        SpinLockGuard lock(s.mu);
        op(s, h, i);
      }
      return;
    }
    std::vector<KeyHash> hashes(std::min(keys.size(), kChunk));
    std::vector<uint32_t> stripe_of(hashes.size());
    std::vector<uint32_t> order(hashes.size());
    std::vector<uint32_t> start(options_.stripes + 1);
    for (size_t base = 0; base < keys.size(); base += kChunk) {
      const size_t n = std::min(kChunk, keys.size() - base);
      std::fill(start.begin(), start.end(), 0);
      for (size_t i = 0; i < n; ++i) {
        hashes[i] = HashKey(keys[base + i]);
        stripe_of[i] = StripeOf(hashes[i], stripe_bits_);
        ++start[stripe_of[i] + 1];
      }
      for (uint32_t st = 0; st < options_.stripes; ++st) start[st + 1] += start[st];
      std::vector<uint32_t> next(start.begin(), start.end() - 1);
      for (size_t i = 0; i < n; ++i)
        order[next[stripe_of[i]]++] = static_cast<uint32_t>(i);
      for (uint32_t st = 0; st < options_.stripes; ++st) {
        if (start[st] == start[st + 1]) continue;
        Stripe& s = stripes_[st];
        SpinLockGuard lock(s.mu);
        // A sliding prefetch window: a core tracks only a few dozen misses at
        // once, and prefetches beyond that are dropped, so prefetching a whole
        // group (64 keys x layers x lines) up front wastes most of them.
        const uint32_t end = start[st + 1];
        const uint32_t window = std::max<uint32_t>(
            2, kPrefetchLines / static_cast<uint32_t>(s.layers.size()));
        uint32_t ahead = start[st];
        for (uint32_t o = start[st]; o < end; ++o) {
          for (; ahead < end && ahead < o + window; ++ahead) {
            for (const Layer& layer : s.layers) layer.Prefetch(hashes[order[ahead]]);
          }
          op(s, hashes[order[o]], base + order[o]);
        }
      }
    }
  }

  static bool ContainsLocked(const Stripe& s, const KeyHash& h) REQUIRES(s.mu) {
    for (const Layer& layer : s.layers) {
      if (layer.ContainsLocked(h)) return true;
    }
    return false;
  }

  InsertResult InsertLocked(Stripe& s, const KeyHash& h, bool count_expected = true)
      REQUIRES(s.mu) {
    std::deque<Layer>& layers = s.layers;
    // The older layers through the published view (an array: indexing the
    // deque costs a division per layer; batch inserts measured 7% slower).
    const View& v = *s.view.load(std::memory_order_relaxed);
    for (uint32_t i = 0; i + 1 < v.n; ++i) {
      if (v.at[i]->ContainsLocked(h)) {
        ++s.inserts_duplicate;
        return InsertResult::kPresent;
      }
    }
    Layer* newest = &layers.back();
    if (newest->Full()) {
      if (newest->ContainsLocked(h)) {
        ++s.inserts_duplicate;
        return InsertResult::kPresent;
      }
      if (options_.scaling && layers.size() < kMaxLayers) {
        newest = &layers.emplace_back(NextCapacity(s), NextError(s));
        Publish(s);
      } else if (TypeOf<Layer>() != FilterType::kBloom) {
        ++s.inserts_full;
        return InsertResult::kFull;
      }
      // A fixed bloom past capacity keeps answering; stats flag it saturated.
    }
    // This check's chance of a false "present".
    const double fpr = count_expected ? FprLocked(s) : 0;
    if (newest->AddIfAbsent(h, &s.saturations)) {
      ++s.inserts_new;
      s.expected_false += fpr;
      if (s.log) {
        s.log->Append(h, /*erase=*/false);
        if (newest->items() >= s.compact_at && !s.due.load(std::memory_order_relaxed)) {
          s.due.store(true, std::memory_order_relaxed);
          wake_.notify_one();
        }
      }
      return InsertResult::kInserted;
    }
    ++s.inserts_duplicate;
    return InsertResult::kPresent;
  }

  StripeStats StatsOf(const Stripe& s) const {
    SpinLockGuard lock(s.mu);
    StripeStats st;
    st.layers = static_cast<uint32_t>(s.layers.size());
    double pass = 1;  // probability a non-member passes every layer
    for (const Layer& layer : s.layers) {
      st.items += layer.items();
      st.capacity += layer.capacity();
      st.bytes += layer.Bytes();
      st.fill += layer.Fill() * static_cast<double>(layer.capacity());
      st.relocations += layer.relocations();
      pass *= 1 - layer.EstimatedFpr();
    }
    st.fill = st.capacity ? st.fill / static_cast<double>(st.capacity) : 0;
    st.estimated_fpr = 1 - pass;
    st.inserts_new = s.inserts_new;
    st.inserts_duplicate = s.inserts_duplicate;
    st.inserts_full = s.inserts_full;
    st.erases = s.erases;
    st.saturations = s.saturations;
    st.expected_false_positives = s.expected_false;
    st.saturated = !options_.scaling && s.layers.back().Full();
    st.compactions = s.compactions;
    st.compaction_seconds = s.compaction_seconds;
    st.logged = s.log != nullptr && s.log->ok();
    st.log_buffer_bytes = s.log ? s.log->buffer_bytes() : 0;
    return st;
  }

  // Compaction (striped_compaction.h).
 public:
  using Filter::StartLog;
  Status StartLog(const std::string& dir, double compact_growth,
                  std::function<void(const std::string&)> warn,
                  std::span<const uint64_t> log_bytes) override;
  std::vector<uint64_t> FlushLog() override;
  Status SyncLog() const override;
  void PauseCompaction() override { pause_mu_.lock(); }
  void ResumeCompaction() override { pause_mu_.unlock(); }
  Status CompactAll() override;
  Status Compact(const std::function<void(const std::function<void(std::string_view)>&)>&
                     for_each_key) override;

 private:
  struct Retired {
    std::deque<Layer> layers;
    std::vector<std::unique_ptr<View>> views;
  };
  Status CompactFromLog(uint32_t index);
  HashLog* CompactionStart(Stripe& s, uint64_t* upto, uint64_t* capacity);
  void SwapIn(Stripe& s, Layer fresh, Retired* old) REQUIRES(s.mu);
  void Fail(Stripe& s, const std::string& why) REQUIRES(s.mu);
  void CompactorLoop();
  void StopCompactor();
  uint64_t RebuiltCapacity(uint64_t items) const;

  const FilterOptions options_;
  const unsigned stripe_bits_;
  std::unique_ptr<Stripe[]> stripes_;

  ReadEpochs epochs_;              // grace periods for lock-free lookups
  std::mutex compact_mu_;          // one compaction at a time
  std::mutex pause_mu_;            // the compactor's locked steps; Pause
  std::mutex wake_mu_;             // with wake_: the compactor's sleep
  std::condition_variable wake_;   // notified when a stripe is due
  std::atomic<bool> stop_{false};  // the compactor ends
  std::thread compactor_;          // runs iff compaction is on
  bool log_started_ = false;       // StartLog was called
  double growth_ = 0;              // compact_growth; set by StartLog
  std::function<void(const std::string&)> warn_;
  std::atomic<uint64_t> building_bytes_{0};
  std::atomic<uint64_t> compaction_failures_{0};
};

}  // namespace crawler::dedup::internal

#include "striped_compaction.h"  // the compaction members' definitions
#include "striped_io.h"          // the file members' definitions

#endif  // DEDUP_STRIPED_FILTER_H_
