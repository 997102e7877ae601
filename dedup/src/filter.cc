// StripedFilter<Layer>: the one implementation of Filter, instantiated for the
// three layer types. See filter.h for the design; format.h for the bytes.
#include "dedup/filter.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <type_traits>

#include "base/file_util.h"
#include "bloom_impl.h"
#include "cuckoo_impl.h"
#include "format.h"
#include "spin_lock.h"

namespace crawler::dedup {

KeyHash HashKey(std::string_view key) {
  XXH128_hash_t h = XXH3_128bits_withSeed(key.data(), key.size(), kHashSeed);
  return KeyHash{h.low64, h.high64};
}

const char* FilterTypeName(FilterType type) {
  switch (type) {
    case FilterType::kBloom:
      return "bloom";
    case FilterType::kCuckoo:
      return "cuckoo";
    case FilterType::kCounting:
      return "counting";
  }
  return "unknown";
}

Result<FilterType> ParseFilterType(std::string_view name) {
  if (name == "bloom") return FilterType::kBloom;
  if (name == "cuckoo") return FilterType::kCuckoo;
  if (name == "counting") return FilterType::kCounting;
  return Status::Error(
      Status::Code::kInvalidArgument,
      "type '" + std::string(name) + "' is not bloom, cuckoo or counting");
}

Status ValidateOptions(const FilterOptions& o) {
  auto bad = [](const std::string& msg) {
    return Status::Error(Status::Code::kInvalidArgument, msg);
  };
  if (static_cast<unsigned>(o.type) > 2)
    return bad("type is not bloom, cuckoo or counting");
  if (o.capacity == 0 || o.capacity > (uint64_t{1} << 40)) {
    return bad("capacity " + std::to_string(o.capacity) + " is not in 1 .. 2^40");
  }
  if (!(o.error_rate >= 1e-9 && o.error_rate < 0.5)) {
    return bad("error_rate " + std::to_string(o.error_rate) + " is not in [1e-9, 0.5)");
  }
  if (!(o.expansion >= 1.1 && o.expansion <= 16)) {
    return bad("expansion " + std::to_string(o.expansion) + " is not in [1.1, 16]");
  }
  if (!(o.tightening > 0.05 && o.tightening < 1)) {
    return bad("tightening " + std::to_string(o.tightening) + " is not in (0.05, 1)");
  }
  if (o.stripes == 0 || o.stripes > 65536 || !std::has_single_bit(o.stripes)) {
    return bad("stripes " + std::to_string(o.stripes) +
               " is not a power of two in 1 .. 65536");
  }
  if (o.allow_erase && o.type == FilterType::kBloom) {
    return bad(
        "a bloom filter cannot erase: use type cuckoo or counting when deletes are "
        "wanted");
  }
  return Status::Ok();
}

namespace {

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
      stripes_[i].layers.emplace_back(FirstCapacity(), LayerError(0));
    }
  }

  InsertResult TryInsertHash(const KeyHash& h) override {
    Stripe& s = stripes_[StripeOf(h, stripe_bits_)];
    SpinLockGuard lock(s.mu);
    return InsertLocked(s, h);
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
    // Called with s.mu held (the analysis cannot follow the template call).
    ForEachGroupedByStripe(
        keys, [&](const Stripe& s, const KeyHash& h, size_t i)
                  NO_THREAD_SAFETY_ANALYSIS { out[i] = ContainsLocked(s, h); });
  }

  bool ContainsHash(const KeyHash& h) const override {
    const Stripe& s = stripes_[StripeOf(h, stripe_bits_)];
    SpinLockGuard lock(s.mu);
    return ContainsLocked(s, h);
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
      t.per_stripe.push_back(st);
    }
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

  // frozen: no other thread uses the filter; write each layer straight from
  // its memory (no copy, no lock held across I/O).
  Status WriteImpl(std::FILE* out, const std::string& name, bool frozen) const {
    Status st = WritePreamble(out, name);
    if (!st.ok()) return st;
    ByteWriter head;
    head.U8(static_cast<uint8_t>(options_.type));
    head.U8(options_.scaling ? 1 : 0);
    head.U8(options_.allow_erase ? 1 : 0);
    head.U8(0);
    head.U32(options_.stripes);
    head.U64(options_.capacity);
    head.F64(options_.error_rate);
    head.F64(options_.expansion);
    head.F64(options_.tightening);
    st = WriteSection(out, name, kTagHead, head);
    uint64_t total_items = 0;
    for (uint32_t i = 0; i < options_.stripes && st.ok(); ++i) {
      ByteWriter w(frozen);
      {
        // The only pause a writer causes: copying one stripe under its lock.
        const Stripe& s = stripes_[i];
        SpinLockGuard lock(s.mu);
        size_t bytes = 64;
        for (const Layer& layer : s.layers) bytes += layer.data().size() + 96;
        w.Reserve(bytes);
        w.U32(i);
        w.U32(static_cast<uint32_t>(s.layers.size()));
        w.U64(s.inserts_new);
        w.U64(s.inserts_duplicate);
        w.U64(s.inserts_full);
        w.U64(s.erases);
        w.U64(s.saturations);
        for (const Layer& layer : s.layers) {
          EncodeLayer(layer, &w);
          total_items += layer.items();
        }
      }
      st = WriteSection(out, name, kTagStripe, w);
    }
    if (!st.ok()) return st;
    ByteWriter end;
    end.U32(options_.stripes);
    end.U32(0);
    end.U64(total_items);
    return WriteSection(out, name, kTagEnd, end);
  }

  // Parses one STRP payload into stripe `index`.
  // Setup only: the filter is not shared yet.
  Status DecodeStripe(uint32_t index, const std::vector<uint8_t>& payload,
                      const std::string& name,
                      uint64_t* items) NO_THREAD_SAFETY_ANALYSIS {
    const std::string what = name + ": stripe " + std::to_string(index);
    ByteReader r(payload.data(), payload.size());
    Stripe& s = stripes_[index];
    uint32_t got_index = r.U32();
    uint32_t layers = r.U32();
    s.inserts_new = r.U64();
    s.inserts_duplicate = r.U64();
    s.inserts_full = r.U64();
    s.erases = r.U64();
    s.saturations = r.U64();
    if (!r.ok()) return Corrupt(what + ": stripe header is cut short");
    if (got_index != index) {
      return Corrupt(what + ": section holds stripe " + std::to_string(got_index));
    }
    if (layers == 0 || layers > kMaxLayers) {
      return Corrupt(what + ": layer count " + std::to_string(layers) + " out of range");
    }
    for (uint32_t l = 0; l < layers; ++l) {
      Layer layer;
      Status st = DecodeLayer(&r, what + " layer " + std::to_string(l), &layer);
      if (!st.ok()) return st;
      *items += layer.items();
      s.layers.push_back(std::move(layer));
    }
    if (r.remaining() != 0)
      return Corrupt(what + ": trailing bytes after the last layer");
    return Status::Ok();
  }

 private:
  struct alignas(64) Stripe {  // own cache line: no false sharing between locks
    mutable SpinLock mu;
    std::vector<Layer> layers GUARDED_BY(mu);  // oldest first, never empty
    uint64_t inserts_new GUARDED_BY(mu) = 0;
    uint64_t inserts_duplicate GUARDED_BY(mu) = 0;
    uint64_t inserts_full GUARDED_BY(mu) = 0;
    uint64_t erases GUARDED_BY(mu) = 0;
    uint64_t saturations GUARDED_BY(mu) = 0;
    // The expected false positives: each new key adds the stripe's FPR at its
    // check (FprLocked; not saved with the filter).
    double expected_false GUARDED_BY(mu) = 0;
    double fpr GUARDED_BY(mu) =
        0;  // cached: at fpr_layers layers, fpr_items in the newest
    size_t fpr_layers GUARDED_BY(mu) = 0;
    uint64_t fpr_items GUARDED_BY(mu) = 0;
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
  // e_i = e (1 - r) r^i, so that sum over all i is e.
  double LayerError(size_t i) const {
    if (!options_.scaling) return options_.error_rate;
    return options_.error_rate * (1 - options_.tightening) *
           std::pow(options_.tightening, static_cast<double>(i));
  }

  static bool ContainsLocked(const Stripe& s, const KeyHash& h) REQUIRES(s.mu) {
    for (const Layer& layer : s.layers) {
      if (layer.Contains(h)) return true;
    }
    return false;
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

  InsertResult InsertLocked(Stripe& s, const KeyHash& h) REQUIRES(s.mu) {
    std::vector<Layer>& layers = s.layers;
    for (size_t i = 0; i + 1 < layers.size(); ++i) {
      if (layers[i].Contains(h)) {
        ++s.inserts_duplicate;
        return InsertResult::kPresent;
      }
    }
    if (layers.back().Full()) {
      if (layers.back().Contains(h)) {
        ++s.inserts_duplicate;
        return InsertResult::kPresent;
      }
      if (options_.scaling && layers.size() < kMaxLayers) {
        auto capacity = static_cast<uint64_t>(std::ceil(
            static_cast<double>(layers.back().capacity()) * options_.expansion));
        layers.emplace_back(capacity, LayerError(layers.size()));
      } else if (TypeOf<Layer>() != FilterType::kBloom) {
        ++s.inserts_full;
        return InsertResult::kFull;
      }
      // A fixed bloom past capacity keeps answering; stats flag it saturated.
    }
    const double fpr = FprLocked(s);  // this check's chance of a false "present"
    if (layers.back().AddIfAbsent(h, &s.saturations)) {
      ++s.inserts_new;
      s.expected_false += fpr;
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
    return st;
  }

  const FilterOptions options_;
  const unsigned stripe_bits_;
  std::unique_ptr<Stripe[]> stripes_;
};

template <typename Layer>
Result<std::unique_ptr<Filter>> ReadStripes(std::FILE* in, const std::string& name,
                                            const FilterOptions& options) {
  auto filter = std::make_unique<StripedFilter<Layer>>(options, /*empty=*/true);
  std::vector<uint8_t> payload;
  uint64_t items = 0;
  for (uint32_t i = 0; i < options.stripes; ++i) {
    Status st =
        ReadSection(in, name, kTagStripe, "stripe " + std::to_string(i), &payload);
    if (!st.ok()) return st;
    st = filter->DecodeStripe(i, payload, name, &items);
    if (!st.ok()) return st;
  }
  Status st = ReadSection(in, name, kTagEnd, "end", &payload);
  if (!st.ok()) return st;
  ByteReader r(payload.data(), payload.size());
  uint32_t stripes = r.U32();
  r.U32();
  uint64_t total = r.U64();
  if (!r.ok() || stripes != options.stripes || total != items) {
    return Status::Error(Status::Code::kCorruption,
                         name + ": end section does not match the stripes read");
  }
  return std::unique_ptr<Filter>(std::move(filter));
}

}  // namespace

Result<std::unique_ptr<Filter>> Filter::Create(const FilterOptions& options) {
  Status st = ValidateOptions(options);
  if (!st.ok()) return st;
  switch (options.type) {
    case FilterType::kBloom:
      return std::unique_ptr<Filter>(
          std::make_unique<StripedFilter<BloomLayer>>(options, false));
    case FilterType::kCounting:
      return std::unique_ptr<Filter>(
          std::make_unique<StripedFilter<CountingLayer>>(options, false));
    case FilterType::kCuckoo:
      return std::unique_ptr<Filter>(
          std::make_unique<StripedFilter<CuckooLayer>>(options, false));
  }
  return Status::Error(Status::Code::kInvalidArgument, "unknown filter type");
}

Result<std::unique_ptr<Filter>> Filter::Read(std::FILE* in, const std::string& name) {
  Status st = ReadPreamble(in, name);
  if (!st.ok()) return st;
  std::vector<uint8_t> payload;
  st = ReadSection(in, name, kTagHead, "header", &payload);
  if (!st.ok()) return st;
  ByteReader r(payload.data(), payload.size());
  FilterOptions o;
  uint8_t type = r.U8();
  uint8_t scaling = r.U8();
  uint8_t allow_erase = r.U8();
  r.U8();
  o.stripes = r.U32();
  o.capacity = r.U64();
  o.error_rate = r.F64();
  o.expansion = r.F64();
  o.tightening = r.F64();
  if (!r.ok() || r.remaining() != 0) {
    return Status::Error(Status::Code::kCorruption,
                         name + ": header section has the wrong size");
  }
  if (type > 2 || scaling > 1 || allow_erase > 1) {
    return Status::Error(Status::Code::kCorruption,
                         name + ": header has an invalid type or flag");
  }
  o.type = static_cast<FilterType>(type);
  o.scaling = scaling == 1;
  o.allow_erase = allow_erase == 1;
  st = ValidateOptions(o);
  if (!st.ok()) {
    return Status::Error(Status::Code::kCorruption, name + ": header: " + st.message());
  }
  switch (o.type) {
    case FilterType::kBloom:
      return ReadStripes<BloomLayer>(in, name, o);
    case FilterType::kCounting:
      return ReadStripes<CountingLayer>(in, name, o);
    case FilterType::kCuckoo:
      return ReadStripes<CuckooLayer>(in, name, o);
  }
  return Status::Error(Status::Code::kCorruption, name + ": unknown filter type");
}

Result<std::unique_ptr<Filter>> Filter::Load(const std::string& path) {
  std::FILE* in = std::fopen(path.c_str(), "rb");
  if (in == nullptr) {
    return Status::Error(Status::Code::kIoError,
                         path + ": open: " + std::strerror(errno));
  }
  auto result = Read(in, path);
  bool trailing = result.ok() && std::fgetc(in) != EOF;
  std::fclose(in);
  if (trailing) {
    return Status::Error(Status::Code::kCorruption,
                         path + ": trailing bytes after the end section");
  }
  return result;
}

Status Filter::Save(const std::string& path) const {
  return WriteFileAtomic(path, [&](std::FILE* out) { return Write(out, path + ".tmp"); });
}

}  // namespace crawler::dedup
