// dedup_bench: speed, memory and measured false-positive rate of the URL-seen
// filters, beside a plain C++ Bloom filter, on the same URL-like keys.
//
//   build/tests/dedup_bench                  # N = 4*10^6, all variants, 1 and 2 threads
//   build/tests/dedup_bench --n 10000000     # docs/dedup.md's target size
//   build/tests/dedup_bench --n 100000000 --threads 1
//   build/tests/dedup_bench --variants bloom --tightening 0.5
//   build/tests/dedup_bench --n 100000000 --compact 0,1.25,1.5,2,4
//   build/tests/dedup_bench --n 1000000000 --compact 1.5 --start 1000000
//   build/tests/dedup_bench --n 10000000 --single --variants bloom
//
// --compact G,...: the compaction table instead (filter.h, "The hash log and
// compaction"): bloom (or --variants), batch inserts of N keys generated on the fly (no
// key arrays: RSS is the filter's, plus a bit per key of the bench's own), into a
// right-sized filter, then one started at --start (default N/100) with a hash log in
// --log-dir and compact_growth G (0: the chain just grows). Prints bits/key (highest
// after the first compaction, and at the end), insert Mops/s over the whole run
// (compactions run beside it, on their own thread), the compactions' total time, FPR on
// min(N, 10^7) fresh keys and negative lookups at the end.
//
// --single: the single-key targets as one interleaved run (RunSingleTable):
// the plain filter, the variant on one thread and the variant on two threads
// take turns slice by slice, so a noisy neighbour slows all three alike.
//
// Samples are in docs/benchmarks.md.
//
// Keys are https://host<i%5000>.example.org/section/<i/7>/page-<i>.html?id=<i>,
// generated before any timing; negatives are the next N values of i. Peak RSS
// is reset before each case (so each reports its own) and includes the key
// arrays (their size is printed at the top); the filter's own bytes are the
// bits/key column. Lookups: pos-look/neg-look one key per call, batch-neg
// through ContainsBatch.
// "right": created for N keys, scaling = false. "N/100": created for N/100
// keys, scaling = true, so it grows ~7 layers. Prints numbers; asserts nothing.
#include <sys/mman.h>
#include <unistd.h>
#include <xxhash.h>

#include <CLI/CLI.hpp>
#include <array>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "dedup/filter.h"

namespace {

using crawler::dedup::Filter;
using crawler::dedup::FilterOptions;
using crawler::dedup::FilterType;
using crawler::dedup::InsertResult;
using Clock = std::chrono::steady_clock;

// Appends key i: https://host<i%5000>.example.org/section/<i/7>/page-<i>.html?id=<i>.
void AppendKey(uint64_t i, std::string* arena) {
  char buf[160];
  int len = std::snprintf(buf, sizeof(buf),
                          "https://host%" PRIu64 ".example.org/section/%" PRIu64
                          "/page-%" PRIu64 ".html?id=%" PRIu64,
                          i % 5000, i / 7, i, i);
  arena->append(buf, static_cast<size_t>(len));
}

// N keys in one arena; key i is [offsets[i], offsets[i+1]).
class KeySet {
 public:
  KeySet(uint64_t first, uint64_t n) {
    offsets_.reserve(n + 1);
    arena_.reserve(n * 80);
    for (uint64_t i = first; i < first + n; ++i) {
      offsets_.push_back(arena_.size());
      AppendKey(i, &arena_);
    }
    offsets_.push_back(arena_.size());
  }
  uint64_t size() const { return offsets_.size() - 1; }
  std::string_view operator[](uint64_t i) const {
    return std::string_view(arena_.data() + offsets_[i], offsets_[i + 1] - offsets_[i]);
  }
  uint64_t bytes() const { return arena_.size() + offsets_.size() * 8; }

 private:
  std::string arena_;
  std::vector<uint64_t> offsets_;
};

// The reference: one std::vector<uint64_t>, k = 7, XXH3-128 double hashing.
// Its words get the same huge-page advice as the filters' tables
// (aligned_buffer.h), so the comparison is of the code, not of the TLB: with
// 4 KB pages it ran 5-10% slower here (THP is "madvise" on this VM).
class PlainBloom {
 public:
  PlainBloom(uint64_t n, double error) {
    bits_ = static_cast<uint64_t>(std::ceil(-static_cast<double>(n) * std::log(error) /
                                            (std::log(2.0) * std::log(2.0))));
    const uint64_t words = bits_ / 64 + 1;
    words_.reserve(words);  // mapped, not yet touched: the advice comes first
    const auto begin =
        (reinterpret_cast<uintptr_t>(words_.data()) + 4095) & ~uintptr_t{4095};
    const auto end =
        (reinterpret_cast<uintptr_t>(words_.data() + words)) & ~uintptr_t{4095};
    if (end > begin)
      ::madvise(reinterpret_cast<void*>(begin), end - begin,
                MADV_HUGEPAGE);  // advice only
    words_.assign(words, 0);
  }
  bool Insert(std::string_view key) {
    XXH128_hash_t h = XXH3_128bits(key.data(), key.size());
    bool added = false;
    for (uint64_t i = 0; i < kK; ++i) {
      uint64_t bit = (h.low64 + i * h.high64) % bits_;
      uint64_t mask = uint64_t{1} << (bit & 63);
      added |= (words_[bit >> 6] & mask) == 0;
      words_[bit >> 6] |= mask;
    }
    return added;
  }
  bool Contains(std::string_view key) const {
    XXH128_hash_t h = XXH3_128bits(key.data(), key.size());
    for (uint64_t i = 0; i < kK; ++i) {
      uint64_t bit = (h.low64 + i * h.high64) % bits_;
      if ((words_[bit >> 6] & (uint64_t{1} << (bit & 63))) == 0) return false;
    }
    return true;
  }
  uint64_t bytes() const { return words_.size() * 8; }

 private:
  static constexpr uint64_t kK = 7;
  uint64_t bits_;
  std::vector<uint64_t> words_;
};

struct Args {
  uint64_t n =
      4'000'000;  // the default run stays under a minute; targets use --n 10000000
  std::vector<int> threads = {1, 2};
  std::vector<std::string> variants = {"plain", "bloom", "cuckoo", "counting"};
  std::vector<std::string> starts = {"right", "N/100"};
  double error = 0.01;
  double tightening = 0.85;
  uint32_t stripes = 16;
  std::vector<double> compact;  // --compact: the compaction table
  uint64_t start = 0;           // its first capacity (0: N/100)
  std::string log_dir = "/tmp/dedup_bench_log";
  bool trace = false;   // --trace: the compaction table's runs, step by step
  bool memory = false;  // --memory: RSS growth against Stats().bytes
  bool adopt = false;   // --adopt: the compaction table times a resume's load
  bool single = false;  // --single: the interleaved single-key table
};

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "dedup_bench: %s\nusage: dedup_bench [--n N] [--threads 1,2] "
               "[--variants plain,bloom,cuckoo,counting] [--starts right,N/100] "
               "[--error E] [--tightening R] [--stripes S]\n",
               why);
  std::exit(2);
}

Args ParseArgs(int argc, char** argv) {
  Args a;
  CLI::App app{"dedup_bench: the URL-seen filters against a plain hash set"};
  std::string threads, variants, starts;
  app.add_option("--n", a.n, "keys")->capture_default_str();
  app.add_option("--threads", threads, "thread counts, comma-separated (e.g. 1,2)");
  app.add_option("--variants", variants, "plain,bloom,cuckoo,counting");
  app.add_option("--starts", starts, "initial capacities: right,N/100");
  app.add_option("--error", a.error, "target FPR")->capture_default_str();
  app.add_option("--tightening", a.tightening, "tightening ratio r")
      ->capture_default_str();
  app.add_option("--stripes", a.stripes, "lock stripes")->capture_default_str();
  std::string compact;
  app.add_option("--compact", compact,
                 "compaction table: compact_growth values, e.g. 0,1.5,2");
  app.add_option("--start", a.start, "compaction table: first capacity (default N/100)");
  app.add_option("--log-dir", a.log_dir, "compaction table: hash log directory")
      ->capture_default_str();
  app.add_flag("--adopt", a.adopt,
               "compaction table: save each compacted filter, then time Load and "
               "StartLog adopting its hash log (page cache dropped first; root)");
  app.add_flag("--single", a.single,
               "single-key table: plain, 1 thread and 2 threads interleaved slice by "
               "slice (one variant, right-sized)");
  app.add_flag("--memory", a.memory,
               "memory check: RSS growth of right-sized filters against Stats().bytes");
  app.add_flag(
      "--trace", a.trace,
      "compaction table: print keys, bits/key, layers, compactions at each 1% of N");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e) == 0 ? 0 : 2);
  }
  if (!threads.empty()) {
    a.threads.clear();
    for (auto& t : Split(threads)) a.threads.push_back(std::atoi(t.c_str()));
  }
  if (!variants.empty()) {
    a.variants = Split(variants);
  } else if (!compact.empty()) {
    a.variants = {"bloom"};  // the compaction table's default
  }
  if (!starts.empty()) a.starts = Split(starts);
  for (auto& g : Split(compact)) a.compact.push_back(std::atof(g.c_str()));
  if (a.n < 1000) Usage("--n must be at least 1000");
  return a;
}

// Runs body(begin, end) over [0, n) split into `threads` contiguous parts;
// returns Mops/s over the wall time.
template <typename Body>
double Parallel(uint64_t n, int threads, Body body) {
  auto start = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    uint64_t begin = n * static_cast<uint64_t>(t) / static_cast<uint64_t>(threads);
    uint64_t end = n * static_cast<uint64_t>(t + 1) / static_cast<uint64_t>(threads);
    pool.emplace_back([=] { body(begin, end); });
  }
  for (auto& th : pool) th.join();
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return static_cast<double>(n) / seconds / 1e6;
}

// Peak RSS of this process since the last ResetPeakRss (Linux: writing 5 to
// clear_refs resets VmHWM), so each case reports its own peak.
void ResetPeakRss() {
  if (std::FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
    std::fputs("5", f);
    std::fclose(f);
  }
}

// A "Name:   N kB" line of /proc/self/status, in kB (-1 if absent).
double ProcStatusKb(const char* name) {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  double kb = -1;
  const size_t len = std::strlen(name);
  while (std::fgets(line, sizeof(line), f)) {
    if (std::strncmp(line, name, len) == 0) kb = std::strtod(line + len, nullptr);
  }
  std::fclose(f);
  return kb;
}

double PeakRssMb() { return ProcStatusKb("VmHWM:") / 1024; }

struct Row {
  uint32_t layers = 1;
  double bits_per_key = 0, fpr = 0, insert = 0, batch = -1, pos = 0, neg = 0,
         batch_neg = -1;
  uint64_t lost = 0;  // positives not found (must be 0)
};

Row RunPlain(const Args& a, const KeySet& keys, const KeySet& negatives) {
  Row r;
  PlainBloom f(a.n, a.error);
  r.insert = Parallel(a.n, 1, [&](uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) f.Insert(keys[i]);
  });
  uint64_t found = 0, fp = 0;
  r.pos = Parallel(a.n, 1, [&](uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) found += f.Contains(keys[i]);
  });
  r.neg = Parallel(a.n, 1, [&](uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) fp += f.Contains(negatives[i]);
  });
  r.lost = a.n - found;
  r.fpr = static_cast<double>(fp) / static_cast<double>(a.n);
  r.bits_per_key = 8.0 * static_cast<double>(f.bytes()) / static_cast<double>(a.n);
  return r;
}

// ContainsBatch over keys [0, n) in chunks of 1024; Mops/s.
double BatchLookups(const Filter& f, const KeySet& keys, uint64_t n, int threads) {
  return Parallel(n, threads, [&](uint64_t b, uint64_t e) {
    constexpr uint64_t kChunk = 1024;
    std::vector<std::string_view> chunk;
    std::unique_ptr<bool[]> out(new bool[kChunk]);
    for (uint64_t i = b; i < e; i += kChunk) {
      chunk.clear();
      for (uint64_t j = i; j < std::min(e, i + kChunk); ++j) chunk.push_back(keys[j]);
      f.ContainsBatch(chunk, std::span<bool>(out.get(), chunk.size()));
    }
  });
}

std::unique_ptr<Filter> Make(const Args& a, FilterType type, bool right) {
  FilterOptions o;
  o.type = type;
  o.capacity = right ? a.n : a.n / 100;
  o.scaling = !right;
  o.error_rate = a.error;
  o.tightening = a.tightening;
  o.stripes = a.stripes;
  auto f = Filter::Create(o);
  if (!f.ok()) {
    std::fprintf(stderr, "dedup_bench: %s\n", f.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(f).value();
}

Row RunFilter(const Args& a, FilterType type, bool right, int threads, const KeySet& keys,
              const KeySet& negatives) {
  Row r;
  std::atomic<uint64_t> found{0}, fp{0};
  {
    // Batch insert into a filter of its own, so both paths start empty.
    auto f = Make(a, type, right);
    r.batch = Parallel(a.n, threads, [&](uint64_t b, uint64_t e) {
      constexpr uint64_t kChunk = 1024;
      std::vector<std::string_view> chunk;
      std::vector<InsertResult> out(kChunk);
      for (uint64_t i = b; i < e; i += kChunk) {
        chunk.clear();
        for (uint64_t j = i; j < std::min(e, i + kChunk); ++j) chunk.push_back(keys[j]);
        f->InsertBatch(chunk, std::span<InsertResult>(out.data(), chunk.size()));
      }
    });
  }
  auto f = Make(a, type, right);
  r.insert = Parallel(a.n, threads, [&](uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) f->Insert(keys[i]);
  });
  r.pos = Parallel(a.n, threads, [&](uint64_t b, uint64_t e) {
    uint64_t n = 0;
    for (uint64_t i = b; i < e; ++i) n += f->Contains(keys[i]);
    found += n;
  });
  r.neg = Parallel(a.n, threads, [&](uint64_t b, uint64_t e) {
    uint64_t n = 0;
    for (uint64_t i = b; i < e; ++i) n += f->Contains(negatives[i]);
    fp += n;
  });
  r.batch_neg = BatchLookups(*f, negatives, a.n, threads);
  auto st = f->Stats();
  r.lost = a.n - found;
  r.fpr = static_cast<double>(fp) / static_cast<double>(a.n);
  r.bits_per_key = 8.0 * static_cast<double>(st.bytes) / static_cast<double>(a.n);
  r.layers = st.layers_max;
  return r;
}

// ---- The compaction table (--compact) ------------------------------------

// Keys [first, first + n) as KeySet makes them, into one reused arena.
class KeyChunk {
 public:
  void Fill(uint64_t first, uint64_t n) {
    arena_.clear();
    ends_.clear();
    for (uint64_t i = first; i < first + n; ++i) {
      AppendKey(i, &arena_);
      ends_.push_back(arena_.size());
    }
    views_.clear();
    for (size_t i = 0, begin = 0; i < ends_.size(); begin = ends_[i++])
      views_.emplace_back(arena_.data() + begin, ends_[i] - begin);
  }
  const std::vector<std::string_view>& views() const { return views_; }

 private:
  std::string arena_;
  std::vector<size_t> ends_;
  std::vector<std::string_view> views_;
};

struct CompactRow {
  uint32_t layers = 0;
  double max_bits = -1, end_bits = 0, insert = 0, compact_s = 0, fpr = 0, neg = 0,
         batch_neg = 0, rss = 0;
  uint64_t compactions = 0, lost = 0, checked = 0;
  // --adopt: a resume's dedup part, from a cold page cache.
  double load_s = 0, scan_s = 0, adopt_s = 0, filter_mb = 0, log_mb = 0;
};

void DropCaches() {
  ::sync();
  if (std::FILE* f = std::fopen("/proc/sys/vm/drop_caches", "w")) {
    std::fputs("3", f);
    std::fclose(f);
  }
}

double DirMb(const std::string& dir) {
  double bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".hlog") bytes += static_cast<double>(e.file_size());
  return bytes / 1e6;
}

// Saves `f`, destroys it, and times what a resume does with the two: Load
// the filter, then StartLog adopting each stripe's log and cutting it back
// to the saved count, once finding the cut from the block headers (no
// recorded lengths: a checkpoint from before they were recorded) and once
// from the lengths FlushLog returned (what the crawler does).
void TimeAdopt(const Args& a, double growth, std::unique_ptr<Filter> f, CompactRow* r) {
  const std::string saved = a.log_dir + "/filter.bin";
  const std::vector<uint64_t> lengths = f->FlushLog();
  if (!f->SyncLog().ok() || !f->Save(saved).ok()) Usage("--adopt: cannot save");
  f.reset();
  r->filter_mb = static_cast<double>(std::filesystem::file_size(saved)) / 1e6;
  r->log_mb = DirMb(a.log_dir);
  for (bool scan : {true, false}) {
    DropCaches();
    auto t0 = Clock::now();
    auto loaded = Filter::Load(saved);
    if (!loaded.ok()) Usage(loaded.status().message().c_str());
    r->load_s = std::chrono::duration<double>(Clock::now() - t0).count();
    DropCaches();
    t0 = Clock::now();
    std::string warned;
    crawler::Status st = (*loaded)->StartLog(
        a.log_dir, growth, [&](const std::string& m) { warned = m; },
        scan ? std::span<const uint64_t>() : std::span<const uint64_t>(lengths));
    (scan ? r->scan_s : r->adopt_s) =
        std::chrono::duration<double>(Clock::now() - t0).count();
    if (!st.ok() || !warned.empty())
      Usage(("--adopt: " + st.ToString() + " " + warned).c_str());
    // The adopted logs rebuild every stripe (each compaction counts its
    // log's entries against the stripe's).
    if (!(*loaded)->CompactAll().ok())
      Usage("--adopt: a rebuild from the adopted log failed");
  }
}

// growth < 0: the right-sized filter; else started small, compact_growth G.
CompactRow RunCompact(const Args& a, FilterType type, double growth) {
  constexpr uint64_t kChunk = 1024;
  FilterOptions o;
  o.type = type;
  o.capacity = growth < 0 ? a.n : (a.start ? a.start : a.n / 100);
  o.scaling = growth >= 0;
  o.error_rate = a.error;
  o.tightening = a.tightening;
  o.stripes = a.stripes;
  auto created = Filter::Create(o);
  if (!created.ok()) {
    std::fprintf(stderr, "dedup_bench: %s\n", created.status().ToString().c_str());
    std::exit(1);
  }
  std::unique_ptr<Filter> f = std::move(created).value();
  if (growth >= 0) {
    std::error_code ec;
    std::filesystem::remove_all(a.log_dir, ec);
    crawler::Status st = f->StartLog(a.log_dir, growth, [](const std::string& m) {
      std::fprintf(stderr, "dedup_bench: %s\n", m.c_str());
    });
    if (!st.ok()) {
      std::fprintf(stderr, "dedup_bench: %s\n", st.ToString().c_str());
      std::exit(1);
    }
  }
  CompactRow r;
  std::vector<uint64_t> admitted((a.n + 63) / 64);
  KeyChunk chunk;
  std::vector<InsertResult> out(kChunk);
  double insert_s = 0;
  uint64_t traced_pct = 0;
  for (uint64_t base = 0; base < a.n; base += kChunk) {
    const uint64_t n = std::min(kChunk, a.n - base);
    chunk.Fill(base, n);
    auto t0 = Clock::now();
    f->InsertBatch(chunk.views(), std::span<InsertResult>(out.data(), n));
    insert_s += std::chrono::duration<double>(Clock::now() - t0).count();
    for (uint64_t i = 0; i < n; ++i) {
      if (out[i] == InsertResult::kInserted)
        admitted[(base + i) / 64] |= uint64_t{1} << ((base + i) % 64);
    }
    if ((base / kChunk) % 64 == 63 || base + n == a.n) {
      auto st = f->Stats();
      const double bits = 8.0 * static_cast<double>(st.bytes) /
                          static_cast<double>(std::max<uint64_t>(1, st.inserts_new));
      const bool new_max = st.compactions > 0 && bits > r.max_bits;
      if (st.compactions > 0) r.max_bits = std::max(r.max_bits, bits);
      r.end_bits = bits;
      const uint64_t pct = (base + n) * 100 / a.n;
      if (a.trace && (pct != traced_pct || new_max)) {
        traced_pct = pct;
        std::printf("  trace g=%g keys %" PRIu64
                    " bits/key %.2f layers %u..%u compactions %" PRIu64 "\n",
                    growth, base + n, bits, st.layers_min, st.layers_max, st.compactions);
      }
    }
  }
  r.rss = PeakRssMb();
  r.insert = static_cast<double>(a.n) / insert_s / 1e6;
  // No key admitted is missing: all of them up to 10^8, else every k-th.
  const uint64_t step = std::max<uint64_t>(1, a.n / 100'000'000);
  for (uint64_t base = 0; base < a.n; base += kChunk * step) {
    const uint64_t n = std::min(kChunk, a.n - base);
    chunk.Fill(base, n);
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t k = base + i;
      if ((admitted[k / 64] >> (k % 64) & 1) == 0) continue;
      ++r.checked;
      r.lost += f->Contains(chunk.views()[i]) ? 0 : 1;
    }
  }
  const uint64_t m = std::min<uint64_t>(a.n, 10'000'000);
  KeySet negatives(a.n, m);
  uint64_t fp = 0;
  r.neg = Parallel(m, 1, [&](uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) fp += f->Contains(negatives[i]);
  });
  r.fpr = static_cast<double>(fp) / static_cast<double>(m);
  r.batch_neg = BatchLookups(*f, negatives, m, 1);
  auto st = f->Stats();
  r.layers = st.layers_max;
  r.compactions = st.compactions;
  r.compact_s = st.compaction_seconds;
  if (a.adopt && growth >= 0) TimeAdopt(a, growth, std::move(f), &r);
  return r;
}

int RunCompactRows(const Args& a, FilterType type, const std::vector<double>& runs);

int RunCompactTable(const Args& a) {
  std::printf("dedup_bench --compact: N=%" PRIu64 ", start %" PRIu64
              ", error %g, stripes %u, cores %u, log %s\n",
              a.n, a.start ? a.start : a.n / 100, a.error, a.stripes,
              std::thread::hardware_concurrency(), a.log_dir.c_str());
  std::printf("%-8s %6s %9s %8s %9s %7s %9s %9s %8s %9s %8s\n", "growth", "layers",
              "max-bits", "end-bits", "batch-ins", "compact", "compact-s", "FPR",
              "neg-look", "batch-neg", "RSS-MB");
  std::printf("%-8s %6s %9s %8s %9s %7s %9s %9s %8s %9s %8s\n", "", "(end)",
              "(after 1st)", "", "Mops/s", "(count)", "(total)", "", "Mops/s", "Mops/s",
              "peak");
  std::fflush(stdout);
  std::vector<double> runs = {-1};
  runs.insert(runs.end(), a.compact.begin(), a.compact.end());
  for (const std::string& variant : a.variants) {
    auto type = crawler::dedup::ParseFilterType(variant);
    if (!type.ok()) {
      std::fprintf(stderr, "dedup_bench: %s\n", type.status().ToString().c_str());
      return 2;
    }
    std::printf("%s:\n", variant.c_str());
    if (RunCompactRows(a, *type, runs) != 0) return 1;
  }
  std::error_code ec;
  std::filesystem::remove_all(a.log_dir, ec);
  return 0;
}

int RunCompactRows(const Args& a, FilterType type, const std::vector<double>& runs) {
  for (double g : runs) {
    ResetPeakRss();
    CompactRow r = RunCompact(a, type, g);
    char name[16];
    if (g < 0) {
      std::snprintf(name, sizeof(name), "right");
    } else {
      std::snprintf(name, sizeof(name), "%g", g);
    }
    char max_bits[16] = "-";
    if (r.max_bits >= 0) std::snprintf(max_bits, sizeof(max_bits), "%.2f", r.max_bits);
    std::printf("%-8s %6u %9s %8.2f %9.2f %7" PRIu64 " %9.2f %9.5f %8.2f %9.2f %8.0f%s\n",
                name, r.layers, max_bits, r.end_bits, r.insert, r.compactions,
                r.compact_s, r.fpr, r.neg, r.batch_neg, r.rss,
                r.lost ? "  LOST KEYS!" : "");
    if (a.adopt && g >= 0) {
      std::printf(
          "  adopt (cold cache): Load %.2f s (%.0f MB filter); StartLog over %.0f MB of "
          "hash log: %.3f s finding the cuts, %.3f s with the recorded lengths\n",
          r.load_s, r.filter_mb, r.log_mb, r.scan_s, r.adopt_s);
    }
    std::fflush(stdout);
    if (r.lost) return 1;
  }
  return 0;
}

}  // namespace

// Resident set size now (VmRSS), bytes.
double RssBytes() { return ProcStatusKb("VmRSS:") * 1024; }

// Is the memory line true? For each variant, a right-sized filter of N keys
// (synthetic hashes: no key arrays to blur the figure), the growth of VmRSS
// over its life against what Stats().bytes reports.
int RunMemoryTable(const Args& a) {
  std::printf("dedup_bench --memory: N=%" PRIu64 " error=%g stripes=%u\n", a.n, a.error,
              a.stripes);
  std::printf("%-9s %12s %12s %8s\n", "variant", "Stats MB", "RSS grew MB", "ratio");
  for (const std::string& variant : a.variants) {
    if (variant == "plain") continue;  // no Stats()
    auto type = crawler::dedup::ParseFilterType(variant);
    if (!type.ok()) Usage(type.status().message().c_str());
    const double before = RssBytes();
    auto f = Make(a, *type, /*right=*/true);
    uint64_t state = 0;
    auto next = [&state] {  // SplitMix64
      uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
      return z ^ (z >> 31);
    };
    for (uint64_t i = 0; i < a.n; ++i) {
      const uint64_t lo = next();
      f->TryInsertHash(crawler::dedup::KeyHash{lo, next()});
    }
    const double grew = RssBytes() - before;
    const double bytes = static_cast<double>(f->Stats().bytes);
    std::printf("%-9s %12.1f %12.1f %8.3f\n", variant.c_str(), bytes / 1e6, grew / 1e6,
                grew / bytes);
  }
  return 0;
}

// The single-key targets (one thread >= 0.9x the plain filter, so the
// lock-striped wrapper costs little; two threads >= 1.3x one, so it scales) on a shared
// VM. Run one after another, the three contenders meet different neighbours: the plain
// filter alone ranged 4.1 to 8.9 Mops/s between runs of the same command here. So they
// take turns on slices of 2^18 keys (the order rotates each slice), each contender's time
// is summed over its slices, and the ratios come from the same minutes.
// "1 thr" and "2 thr" are two right-sized filters of the variant fed the same
// keys; "2 thr" splits each slice over two threads.
int RunSingleTable(const Args& a, const KeySet& keys, const KeySet& negatives) {
  if (a.variants.size() != 1 || a.variants[0] == "plain")
    Usage("--single takes one --variants (bloom, cuckoo or counting)");
  auto type = crawler::dedup::ParseFilterType(a.variants[0]);
  if (!type.ok()) Usage(type.status().message().c_str());
  PlainBloom plain(a.n, a.error);
  auto one = Make(a, *type, /*right=*/true);
  auto two = Make(a, *type, /*right=*/true);
  constexpr uint64_t kSlice = uint64_t{1} << 18;
  // Seconds per contender (plain, 1 thr, 2 thr) for one phase; `hits`, the
  // phase's hits per contender. `op(c, i)` does key i for contender c and
  // returns 1 for a hit.
  std::array<uint64_t, 3> hits;
  auto phase = [&](auto op) {
    std::array<double, 3> secs = {0, 0, 0};
    hits = {0, 0, 0};
    for (uint64_t b = 0, slice = 0; b < a.n; b += kSlice, ++slice) {
      const uint64_t e = std::min(a.n, b + kSlice);
      for (uint64_t turn = 0; turn < 3; ++turn) {
        const int c = static_cast<int>((slice + turn) % 3);
        std::atomic<uint64_t> found{0};
        const int threads = c == 2 ? 2 : 1;
        const double mops = Parallel(e - b, threads, [&](uint64_t lo, uint64_t hi) {
          uint64_t n = 0;
          for (uint64_t i = b + lo; i < b + hi; ++i) n += op(c, i);
          found += n;
        });
        secs[c] += static_cast<double>(e - b) / (mops * 1e6);
        hits[c] += found;
      }
    }
    return secs;
  };
  auto insert = phase([&](int c, uint64_t i) -> uint64_t {
    if (c == 0) return plain.Insert(keys[i]);
    return (c == 1 ? one : two)->Insert(keys[i]);
  });
  auto pos = phase([&](int c, uint64_t i) -> uint64_t {
    if (c == 0) return plain.Contains(keys[i]);
    return (c == 1 ? one : two)->Contains(keys[i]);
  });
  uint64_t lost = 0;
  for (uint64_t h : hits) lost += a.n - h;
  auto neg = phase([&](int c, uint64_t i) -> uint64_t {
    if (c == 0) return plain.Contains(negatives[i]);
    return (c == 1 ? one : two)->Contains(negatives[i]);
  });
  const double n = static_cast<double>(a.n) / 1e6;
  std::printf("dedup_bench --single: N=%" PRIu64
              " %s right-sized, stripes=%u, slices of %" PRIu64
              " keys interleaved (Mops/s)\n",
              a.n, a.variants[0].c_str(), a.stripes, kSlice);
  std::printf("%-10s %8s %8s %8s %11s %11s\n", "", "plain", "1 thr", "2 thr",
              "1thr/plain", "2thr/1thr");
  const char* names[3] = {"insert", "pos-look", "neg-look"};
  const std::array<double, 3>* rows[3] = {&insert, &pos, &neg};
  for (int r = 0; r < 3; ++r) {
    const auto& t = *rows[r];
    std::printf("%-10s %8.2f %8.2f %8.2f %11.2f %11.2f\n", names[r], n / t[0], n / t[1],
                n / t[2], t[0] / t[1], t[1] / t[2]);
  }
  std::printf("FPR (negatives found): plain %.5f, 1 thr %.5f, 2 thr %.5f\n",
              static_cast<double>(hits[0]) / static_cast<double>(a.n),
              static_cast<double>(hits[1]) / static_cast<double>(a.n),
              static_cast<double>(hits[2]) / static_cast<double>(a.n));
  if (lost) std::printf("LOST KEYS: %" PRIu64 "\n", lost);
  return lost ? 1 : 0;
}

int main(int argc, char** argv) {
  Args a = ParseArgs(argc, argv);
  if (!a.compact.empty()) return RunCompactTable(a);
  if (a.memory) return RunMemoryTable(a);
  auto gen_start = Clock::now();
  KeySet keys(0, a.n);
  KeySet negatives(a.n, a.n);
  double gen_s = std::chrono::duration<double>(Clock::now() - gen_start).count();
  if (a.single) return RunSingleTable(a, keys, negatives);
  std::printf("dedup_bench: N=%" PRIu64 " error=%g tightening=%g stripes=%u cores=%u\n",
              a.n, a.error, a.tightening, a.stripes, std::thread::hardware_concurrency());
  std::printf(
      "keys: avg %.1f bytes; keys + negatives arrays %.0f MB (generated in %.1f s, "
      "untimed)\n",
      static_cast<double>(keys.bytes() - (a.n + 1) * 8) / static_cast<double>(a.n),
      static_cast<double>(keys.bytes() + negatives.bytes()) / 1e6, gen_s);
  std::printf("%-9s %-6s %3s %6s %8s %9s %8s %9s %8s %8s %9s %7s\n", "variant", "start",
              "thr", "layers", "bits/key", "FPR", "insert", "batch-ins", "pos-look",
              "neg-look", "batch-neg", "RSS-MB");
  std::printf("%-9s %-6s %3s %6s %8s %9s %8s %9s %8s %8s %9s %7s\n", "", "", "", "", "",
              "", "Mops/s", "Mops/s", "Mops/s", "Mops/s", "Mops/s", "peak");
  std::fflush(stdout);

  for (const std::string& variant : a.variants) {
    for (const std::string& start : a.starts) {
      bool plain = variant == "plain";
      if (plain && start != "right") continue;  // the reference has one fixed size
      for (int threads : a.threads) {
        if (plain && threads != 1) continue;  // and no locks: single thread only
        ResetPeakRss();
        Row r;
        if (plain) {
          r = RunPlain(a, keys, negatives);
        } else {
          auto type = crawler::dedup::ParseFilterType(variant);
          if (!type.ok()) {
            std::fprintf(stderr, "dedup_bench: %s\n", type.status().ToString().c_str());
            return 2;
          }
          r = RunFilter(a, type.value(), start == "right", threads, keys, negatives);
        }
        auto fmt = [](double v) {
          char buf[16] = "-";
          if (v >= 0) std::snprintf(buf, sizeof(buf), "%.2f", v);
          return std::string(buf);
        };
        std::printf("%-9s %-6s %3d %6u %8.2f %9.5f %8.2f %9s %8.2f %8.2f %9s %7.0f%s\n",
                    variant.c_str(), start.c_str(), threads, r.layers, r.bits_per_key,
                    r.fpr, r.insert, fmt(r.batch).c_str(), r.pos, r.neg,
                    fmt(r.batch_neg).c_str(), PeakRssMb(), r.lost ? "  LOST KEYS!" : "");
        std::fflush(stdout);
        if (r.lost) return 1;
      }
    }
  }
  return 0;
}
