// The URL-seen filter: a lock-striped, scalable approximate set of byte strings.
//
// One Filter answers "have I seen this key?" for the whole crawl. It is built at
// run time from FilterOptions as one of three variants:
//
//   bloom     cache-line-blocked Bloom layers (no delete)     ~10 bits/key at 1%
//   counting  blocked counting Bloom, 4-bit counters (delete)  4x bloom's bits
//   cuckoo    partial-key cuckoo, 4-way buckets (delete)       ~11.2 bits/key at 1%
//
// Each variant is a chain of layers (scalable, Almeida et al. 2007; RedisBloom
// SBChain): when the newest layer holds its capacity a new one is added with
// capacity x expansion and error x tightening. Layer i gets error
// e_i = e (1 - r) r^i, so the compound false-positive rate stays below
// sum(e_i) < e however many keys arrive. With scaling = false there is one
// layer: a full bloom keeps answering (its stats say "saturated"), a full
// cuckoo or counting filter refuses new keys (InsertResult::kFull).
//
// Tightening ratio r (default 0.85). Measured with the bloom variant, started
// at N/100 and grown to N = 10^7 keys (7 layers), error 1%, 16 stripes:
//
//   build/tests/dedup_bench --variants bloom --starts N/100 --threads 1 --tightening R
//
//                    r = 0.5    r = 0.8    r = 0.85   r = 0.9
//   bits/key          26.22      21.42      21.35      21.73
//   measured FPR     0.952%     0.722%     0.601%     0.453%
//
// r = 0.5 (RedisBloom's default) spends the whole error budget on the first
// layers and pays ~5 bits/key more for it; r = 0.85 is near the optimum
// (6/7 for 7 layers) for the 5-10 doublings that a crawl whose first guess was
// off by up to 1000x will see, and degrades slowly beyond.
//
// Lock striping: S stripes (power of two, default 16). The stripe is taken
// from hash bits no layer uses (hash.h). Each stripe is a whole scalable chain
// of capacity/S (plus a 4-sigma headroom for the uneven spread of keys over
// stripes) under its own spin lock, held for the whole check-and-insert, so
// Insert is atomic: when threads race to insert one new key exactly one gets
// true. Stripes grow independently. Why 16: with T threads a thread finds its
// stripe taken about (T-1)/16 of the time (6% on this 2-core machine), a batch
// of 1024 keys takes each lock once for ~64 keys, and the headroom stays small
// (4/sqrt(N/16): 1.3% at N = 10^6). Raise it for many-core machines.
// Lookups (Contains, ContainsBatch) of the bloom and counting variants take
// no lock at all (striped_filter.h says why that is safe); nor does a cuckoo
// Contains (a seqlock, cuckoo_impl.h), while a cuckoo ContainsBatch locks
// each stripe once for its keys (faster on long chains).
//
// Batches (InsertBatch, ContainsBatch) are the fast path: a single-key call
// waits for its one cache miss (and an insert also moves the stripe lock's
// line between cores), while a batch hashes a chunk first and overlaps the
// chunk's misses: 3-5x the single-key rate at 10^7 keys (docs/benchmarks.md,
// dedup_bench). The crawl engine inserts a page's links as one batch.
//
// Threads: every method may be called from any thread at any time, including
// Save while others insert (it locks one stripe at a time; no global pause).
// Ownership: the Filter owns all its memory; it is neither copyable nor movable.
#ifndef DEDUP_FILTER_H_
#define DEDUP_FILTER_H_

#include <boost/describe/class.hpp>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "dedup/hash.h"

namespace crawler::dedup {

enum class FilterType : uint8_t { kBloom = 0, kCuckoo = 1, kCounting = 2 };

const char* FilterTypeName(FilterType type);
// Parses "bloom" | "cuckoo" | "counting".
Result<FilterType> ParseFilterType(std::string_view name);

struct FilterOptions {
  FilterType type = FilterType::kBloom;
  uint64_t capacity = 1'000'000;  // expected keys (whole filter, all stripes)
  double error_rate = 0.01;       // compound false-positive bound, (0, 0.5)
  double expansion = 2.0;         // capacity growth per new layer, >= 1.5... 16
  double tightening = 0.85;       // r: error growth per new layer, (0, 1)
  bool scaling = true;            // false: one fixed layer per stripe
  uint32_t stripes = 16;          // power of two, 1 .. 65536
  bool allow_erase = false;       // true requires cuckoo or counting
};

// Checks every field; the message names the field and the allowed range.
Status ValidateOptions(const FilterOptions& options);

enum class InsertResult : uint8_t {
  kInserted,  // the key was not present and now is
  kPresent,   // the key (or a false-positive twin) was present already
  kFull,      // fixed (non-scaling) cuckoo/counting filter is full: not inserted
};

struct StripeStats {
  uint32_t layers = 0;
  uint64_t items = 0;
  uint64_t capacity = 0;
  uint64_t bytes = 0;
  double fill = 0;           // bloom: set bits / bits; counting: nonzero
                             // counters / counters; cuckoo: load factor
  double estimated_fpr = 0;  // now, from each layer's items and geometry
  uint64_t inserts_new = 0;
  uint64_t inserts_duplicate = 0;
  uint64_t inserts_full = 0;  // refused with kFull
  uint64_t erases = 0;
  uint64_t relocations = 0;  // cuckoo kicks
  uint64_t saturations = 0;  // counting: counters that reached 15
  bool saturated = false;    // fixed bloom past capacity / fixed filter full
  // Sum over the keys inserted as new of the stripe's estimated FPR when each
  // was checked: how many new keys this stripe is expected to have called
  // "present" wrongly (lost: never inserted, never fetched). Counted since
  // this Filter object was created or loaded (not saved in its file).
  double expected_false_positives = 0;
  uint64_t compactions = 0;  // since this object was created or loaded
  double compaction_seconds = 0;
  bool logged = false;            // has a working hash log (compaction possible)
  uint64_t log_buffer_bytes = 0;  // the log's block buffer (not in `bytes`)
};

struct FilterStats {
  FilterType type = FilterType::kBloom;
  FilterOptions options;
  uint32_t stripes = 0;
  uint32_t layers_min = 0;
  uint32_t layers_max = 0;
  uint64_t items = 0;
  uint64_t capacity = 0;
  uint64_t bytes = 0;
  double bits_per_item = 0;
  double fill = 0;           // capacity-weighted mean over stripes
  double estimated_fpr = 0;  // mean over stripes (a key picks one at random)
  double fpr_bound = 0;      // the configured compound bound
  uint64_t inserts_new = 0;
  uint64_t inserts_duplicate = 0;
  uint64_t inserts_full = 0;
  uint64_t erases = 0;
  uint64_t relocations = 0;
  uint64_t saturations = 0;
  uint32_t saturated_stripes = 0;
  double expected_false_positives = 0;  // sum over stripes (StripeStats)
  uint64_t compactions = 0;             // sums over stripes
  double compaction_seconds = 0;        // background work, not a pause
  uint64_t compaction_failures = 0;     // a damaged log: that stripe stops compacting
  uint32_t logged_stripes = 0;          // stripes with a working hash log
  uint64_t log_buffer_bytes = 0;        // up to 64 KiB a logged stripe
  std::vector<StripeStats> per_stripe;

  // One JSON object (docs/dedup.md, "Dedup stats"); per_stripe included iff
  // `with_stripes`.
  std::string ToJson(bool with_stripes = false) const;
};
// The JSON schema (Boost.JSON's value_from follows these; "variant" and the
// options are added by ToJson).
BOOST_DESCRIBE_STRUCT(StripeStats, (),
                      (layers, items, capacity, bytes, fill, estimated_fpr, inserts_new,
                       inserts_duplicate, inserts_full, erases, relocations, saturations,
                       saturated, expected_false_positives, compactions,
                       compaction_seconds, logged, log_buffer_bytes))
BOOST_DESCRIBE_STRUCT(FilterStats, (),
                      (stripes, layers_min, layers_max, items, capacity, bytes,
                       bits_per_item, fill, estimated_fpr, fpr_bound, inserts_new,
                       inserts_duplicate, inserts_full, erases, relocations, saturations,
                       saturated_stripes, expected_false_positives, compactions,
                       compaction_seconds, compaction_failures, logged_stripes,
                       log_buffer_bytes, per_stripe))

class Filter {
 public:
  virtual ~Filter() = default;
  Filter(const Filter&) = delete;
  Filter& operator=(const Filter&) = delete;

  // Builds an empty filter. Errors: kInvalidArgument naming the bad option;
  // allow_erase with type bloom is rejected here, not at the first Erase.
  static Result<std::unique_ptr<Filter>> Create(const FilterOptions& options);

  // Reads a filter written by Save. A damaged, truncated or foreign file is
  // rejected whole with an error naming `path` and what is wrong; nothing is
  // ever half-loaded.
  static Result<std::unique_ptr<Filter>> Load(const std::string& path);
  // Same, from an open stream positioned at the filter's first byte; `name`
  // is used in error messages.
  static Result<std::unique_ptr<Filter>> Read(std::FILE* in, const std::string& name);

  // Returns true iff `key` was not present (and now is). Atomic per key.
  // A full fixed cuckoo/counting filter returns false and counts the refusal
  // in stats; callers that must tell "seen" from "full" use TryInsert.
  bool Insert(std::string_view key) {
    return TryInsertHash(HashKey(key)) == InsertResult::kInserted;
  }
  InsertResult TryInsert(std::string_view key) { return TryInsertHash(HashKey(key)); }
  virtual InsertResult TryInsertHash(const KeyHash& h) = 0;
  // As TryInsertHash, for a key that was checked once already elsewhere (a
  // crawl restoring another filter's keys): a false "present" here loses
  // nothing, so it is not counted in expected_false_positives.
  virtual InsertResult RestoreHash(const KeyHash& h) = 0;

  // Inserts many keys; out[i] is as TryInsert(keys[i]) (of equal keys in one
  // batch, the first gets kInserted). Faster than a loop: it hashes a chunk,
  // groups it by stripe, and per stripe takes the lock once and prefetches
  // every probed line before touching any. REQUIRES: out.size() == keys.size().
  virtual void InsertBatch(std::span<const std::string_view> keys,
                           std::span<InsertResult> out) = 0;

  // True iff the key may be present (false positives at the stated rate,
  // never a false negative for a key inserted and not erased).
  bool Contains(std::string_view key) const { return ContainsHash(HashKey(key)); }
  virtual bool ContainsHash(const KeyHash& h) const = 0;
  // out[i] = Contains(keys[i]), batched as InsertBatch is.
  // REQUIRES: out.size() == keys.size().
  virtual void ContainsBatch(std::span<const std::string_view> keys,
                             std::span<bool> out) const = 0;

  // Removes one copy of `key`. Returns true iff a copy was found and removed.
  // Only for filters created with allow_erase (cuckoo, counting); otherwise
  // returns false. Caveat (counting, and cuckoo on fingerprint twins): erasing
  // a key that was never inserted but tests present removes another key's
  // trace and can cause false negatives.
  bool Erase(std::string_view key) { return EraseHash(HashKey(key)); }
  virtual bool EraseHash(const KeyHash& h) = 0;

  virtual FilterStats Stats() const = 0;
  virtual const FilterOptions& options() const = 0;

  // Writes the filter (format in format.h) to `path` atomically: temp file,
  // fsync, rename, fsync of the directory; the temp is removed on failure.
  // Other threads may keep inserting; each stripe is copied under its own lock.
  Status Save(const std::string& path) const;
  // Writes to an open stream (no fsync); `name` is used in error messages.
  virtual Status Write(std::FILE* out, const std::string& name) const = 0;
  // The same bytes, written straight from the filter's memory without
  // copying a stripe first: much faster for big filters (no page faults on
  // fresh buffers). REQUIRES: no other thread touches the filter meanwhile
  // (e.g. a checkpoint writer in a forked child).
  virtual Status WriteFrozen(std::FILE* out, const std::string& name) const = 0;

  // ---- The hash log and compaction ------------------------------------
  // A chain grown from a small first guess costs ~2.2x the bits of a filter
  // sized right, and a lookup probes every layer. Compaction rebuilds a
  // stripe's chain as ONE layer from the exact record of its keys: each
  // stripe's hash log (hash_log.h; 16 bytes per admitted key and per erase,
  // written in 64 KiB blocks to LOG_DIR/stripe-NNNNN.hlog).
  //
  // Policy, per stripe: when its keys reach 95% of the room of its newest
  // rebuilt (or first) layer, a background thread rebuilds the chain as one
  // layer of g = compact_growth x the keys it then holds, at 0.8 x error_rate
  // (an empty filter's first layers start at that share too); layers added
  // after it (only while the stripe waits for the compactor: the first is
  // (g - 1) / 2 x the rebuilt layer) share the remaining 0.2 x error_rate as a
  // chain does, so the compound bound stays error_rate. Memory then stays
  // between ~1 and ~g x a right-sized filter's, and each key is re-inserted
  // about 1 / (1 - 1/(0.95 g)) - 1 times over a crawl (g = 1.25: ~5; g = 2:
  // ~1.1). Measured at 10^8 keys started at 10^6 (docs/benchmarks.md, dedup_bench
  // --compact): g = 1.25 peaks at 13.2 bits/key after the first rebuild and
  // ends at 12.5 (a chain: 20.8; right-sized: 10.0). One stripe is rebuilt
  // at a time (the extra memory is one stripe's new layer); the build reads
  // the log without the stripe's lock, and only the final step (apply what
  // was logged meanwhile, swap) holds it. Lookups never wait; retired layers
  // are freed once no lookup can still be reading them (read_epochs.h).
  //
  // Starts logging to `dir` (created if missing) and, with compact_growth
  // g > 0 (1.1 .. 16; 0 = log only, never compact by itself), the
  // background compactor. Compaction needs a scaling filter. For a filter
  // with keys (loaded from a checkpoint) each stripe adopts its existing
  // log, cut back to the entries its saved state covers; a stripe whose log
  // is missing, damaged or short keeps working but never compacts, and
  // `warn` is told which and why (it is also told of later failures).
  // Errors: `dir` cannot be created, or this was called before.
  //
  // Finding where to cut a log reads its block headers, which on a cold
  // disk reads the whole log (readahead): 1.9 s for 1.6 GB at 10^8 keys
  // (dedup_bench --compact 1.25 --adopt). Given `log_bytes`, what FlushLog
  // returned before the snapshot was taken, each log is cut to its length
  // without reading it (a first-block check only); a damaged block is then
  // found, and the log refused with a warning, by the stripe's next
  // compaction, which reads every block's checksum and counts the entries.
  Status StartLog(const std::string& dir, double compact_growth,
                  std::function<void(const std::string&)> warn) {
    return StartLog(dir, compact_growth, std::move(warn), {});
  }
  virtual Status StartLog(const std::string& dir, double compact_growth,
                          std::function<void(const std::string&)> warn,
                          std::span<const uint64_t> log_bytes) = 0;
  // Writes every stripe's buffered log entries (no fsync). Call before a
  // checkpoint's snapshot so that the log holds what the snapshot counts.
  // Returns each stripe's log length in bytes (0: no usable log), for
  // StartLog's `log_bytes` when the snapshot is loaded again.
  virtual std::vector<uint64_t> FlushLog() = 0;
  // fdatasync of every log. Takes no lock: safe in a forked child.
  virtual Status SyncLog() const = 0;
  // Holds off the compactor's locked steps while a caller must see the
  // filter still (e.g. across fork()); the build phase may continue.
  virtual void PauseCompaction() = 0;
  virtual void ResumeCompaction() = 0;
  // Rebuilds every logged stripe now, in the calling thread (tests and
  // tools; the background compactor does this as needed). Costs one
  // re-insert per key logged.
  virtual Status CompactAll() = 0;
  // For a library user without a log: rebuilds every stripe from the
  // caller's own key source. `for_each_key(add)` must call add(key) for
  // every key the filter holds (a key left out becomes a false negative);
  // it is called once per stripe (keys of other stripes are skipped), and
  // each stripe's lock is held while its layer is built, so inserts into
  // that stripe wait (lookups do not). Cost: stripes x one pass over the
  // source, and one insert per key.
  virtual Status Compact(
      const std::function<void(const std::function<void(std::string_view)>&)>&
          for_each_key) = 0;

 protected:
  Filter() = default;
};

}  // namespace crawler::dedup

#endif  // DEDUP_FILTER_H_
