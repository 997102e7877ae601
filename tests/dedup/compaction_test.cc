// The hash log and compaction (filter.h): a rebuilt filter keeps every key,
// forgets erased ones, shrinks, survives a save and load with its log cut
// back, and refuses a damaged or short log with a message instead of
// rebuilding from it.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "hash_log.h"
#include "test_util.h"

namespace crawler::dedup {
namespace {

using testing::Bloom;
using testing::Counting;
using testing::Cuckoo;
using testing::MakeFilter;
using testing::ScratchDir;
using testing::UpperTolerance;
using testing::UrlKey;

FilterOptions Grown(FilterType type, uint64_t capacity) {
  FilterOptions o;
  o.type = type;
  o.capacity = capacity;
  o.error_rate = 0.01;
  o.stripes = 8;
  o.allow_erase = type != FilterType::kBloom;
  return o;
}

// Inserts keys [from, to); returns which were admitted as new (the others
// were false positives of the filter: never in it, so a rebuild may drop them).
std::vector<bool> InsertRange(Filter& f, uint64_t from, uint64_t to) {
  std::vector<bool> admitted(to - from);
  for (uint64_t i = from; i < to; ++i) admitted[i - from] = f.Insert(UrlKey(i));
  return admitted;
}

// Admitted keys of [from, ...) that no longer test present: false negatives.
uint64_t Missing(const Filter& f, uint64_t from, const std::vector<bool>& admitted) {
  uint64_t missing = 0;
  for (uint64_t i = 0; i < admitted.size(); ++i)
    missing += admitted[i] && !f.Contains(UrlKey(from + i)) ? 1 : 0;
  return missing;
}

// Fresh keys that test present, over n probes.
uint64_t FalsePositives(const Filter& f, uint64_t n) {
  uint64_t fp = 0;
  for (uint64_t i = 0; i < n; ++i)
    fp += f.Contains("absent/" + std::to_string(i)) ? 1 : 0;
  return fp;
}

TEMPLATE_TEST_CASE("Compaction keeps every key and shrinks a grown chain",
                   "[dedup][compaction]", Bloom, Cuckoo, Counting) {
  ScratchDir dir;
  constexpr uint64_t kKeys = 100'000;
  auto f = MakeFilter(Grown(TestType::kType, kKeys / 100));
  REQUIRE(f->StartLog(dir.File("log"), 0, nullptr).ok());
  const std::vector<bool> first = InsertRange(*f, 0, kKeys);
  const FilterStats grown = f->Stats();
  REQUIRE(grown.layers_max >= 5);
  REQUIRE(grown.logged_stripes == 8);

  REQUIRE(f->CompactAll().ok());
  const FilterStats compacted = f->Stats();
  CHECK(compacted.layers_max == 1);
  CHECK(compacted.compactions == 8);
  CHECK(compacted.compaction_failures == 0);
  CHECK(Missing(*f, 0, first) == 0);
  INFO("bits/key grown " << grown.bits_per_item << ", compacted "
                         << compacted.bits_per_item);
  CHECK(compacted.bits_per_item < 0.8 * grown.bits_per_item);
  // The rebuilt layer holds kKeys in room for 1.25 x kKeys at 0.8% (the
  // default growth when none was given): below the 1% bound.
  const uint64_t probes = 100'000;
  CHECK(static_cast<double>(FalsePositives(*f, probes)) <=
        UpperTolerance(0.01, probes, 4));

  // Growth after a compaction: new keys land in layers after the rebuilt
  // one, and a second compaction takes them in too.
  const std::vector<bool> second = InsertRange(*f, kKeys, 2 * kKeys);
  CHECK(f->Stats().layers_max >= 2);
  REQUIRE(f->CompactAll().ok());
  CHECK(f->Stats().layers_max == 1);
  CHECK(Missing(*f, 0, first) == 0);
  CHECK(Missing(*f, kKeys, second) == 0);
}

TEMPLATE_TEST_CASE("No erased key comes back after a compaction", "[dedup][compaction]",
                   Cuckoo, Counting) {
  ScratchDir dir;
  constexpr uint64_t kKeys = 50'000;
  auto f = MakeFilter(Grown(TestType::kType, kKeys / 100));
  REQUIRE(f->StartLog(dir.File("log"), 0, nullptr).ok());
  const std::vector<bool> admitted = InsertRange(*f, 0, kKeys);
  uint64_t erased = 0, to_erase = 0;
  for (uint64_t i = 0; i < kKeys; i += 2) {
    if (!admitted[i]) continue;  // never in: erasing it would erase a twin
    ++to_erase;
    erased += f->Erase(UrlKey(i)) ? 1 : 0;
  }
  REQUIRE(erased == to_erase);
  REQUIRE(f->CompactAll().ok());
  REQUIRE(f->Stats().layers_max == 1);
  uint64_t back = 0, lost = 0;
  for (uint64_t i = 0; i < kKeys; ++i) {
    const bool present = f->Contains(UrlKey(i));
    if (i % 2 == 0) back += present ? 1 : 0;
    if (i % 2 == 1 && admitted[i]) lost += present ? 0 : 1;
  }
  CHECK(lost == 0);
  // An erased key may still test present as any absent key may (a false
  // positive at <= 1%), never because the rebuild put it back.
  INFO("erased keys present after compaction: " << back);
  CHECK(static_cast<double>(back) <= UpperTolerance(0.01, kKeys / 2, 4));
}

TEST_CASE("The background compactor keeps a grown bloom filter small",
          "[dedup][compaction]") {
  ScratchDir dir;
  constexpr uint64_t kKeys = 400'000;
  auto plain = MakeFilter(Grown(FilterType::kBloom, kKeys / 100));
  auto f = MakeFilter(Grown(FilterType::kBloom, kKeys / 100));
  REQUIRE(f->StartLog(dir.File("log"), 1.5, nullptr).ok());
  std::vector<std::string> keys;
  std::vector<std::string_view> views;
  std::vector<InsertResult> out;
  std::vector<bool> admitted;
  for (uint64_t base = 0; base < kKeys; base += 1000) {
    keys.clear();
    for (uint64_t i = base; i < base + 1000; ++i) keys.push_back(UrlKey(i));
    views.assign(keys.begin(), keys.end());
    out.resize(views.size());
    f->InsertBatch(views, out);
    for (InsertResult r : out) admitted.push_back(r == InsertResult::kInserted);
    plain->InsertBatch(views, out);
  }
  // Let the compactor catch up (it runs every 50 ms at most; up to 60 s on
  // a busy machine).
  for (int i = 0; i < 1200 && f->Stats().layers_max > 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const FilterStats st = f->Stats();
  CHECK(st.compactions >= 8);
  CHECK(st.compaction_failures == 0);
  CHECK(Missing(*f, 0, admitted) == 0);
  INFO("bits/key compacted " << st.bits_per_item << ", grown "
                             << plain->Stats().bits_per_item);
  CHECK(st.bits_per_item < 0.75 * plain->Stats().bits_per_item);
  CHECK(static_cast<double>(FalsePositives(*f, 100'000)) <=
        UpperTolerance(0.01, 100'000, 4));
}

// A grown bloom filter with a log in DIR/log, keys [0, 30000) inserted,
// flushed and saved to DIR/f.bin as a checkpoint does. Returns it (still
// running), which keys it admitted, and the log lengths FlushLog returned
// (what a checkpoint records).
std::unique_ptr<Filter> SavedWithLog(const ScratchDir& dir, std::vector<bool>* admitted,
                                     std::vector<uint64_t>* lengths) {
  auto f = MakeFilter(Grown(FilterType::kBloom, 500));
  REQUIRE(f->StartLog(dir.File("log"), 0, nullptr).ok());
  *admitted = InsertRange(*f, 0, 30'000);
  *lengths = f->FlushLog();
  REQUIRE(lengths->size() == 8);
  REQUIRE(f->Save(dir.File("f.bin")).ok());
  return f;
}

// StartLog as a resume calls it: with the recorded lengths, or without
// (a checkpoint from before they were recorded: the cuts are found by
// reading the block headers).
Status Adopt(Filter& f, const std::string& log, bool recorded,
             const std::vector<uint64_t>& lengths, std::string* warned) {
  return f.StartLog(
      log, 0, [warned](const std::string& m) { *warned += m; },
      recorded ? std::span<const uint64_t>(lengths) : std::span<const uint64_t>());
}

TEST_CASE("A loaded filter adopts its log cut back to the saved state",
          "[dedup][compaction]") {
  const bool recorded = GENERATE(false, true);
  INFO((recorded ? "recorded lengths" : "cuts found by reading"));
  ScratchDir dir;
  const std::string log = dir.File("log");
  std::vector<bool> admitted;
  std::vector<uint64_t> lengths;
  auto f = SavedWithLog(dir, &admitted, &lengths);
  // Keys after the save reach the log but not the saved filter: a crash now
  // resumes from the save, and the log must be cut back to it.
  for (uint64_t i = 30'000; i < 40'000; ++i) f->Insert(UrlKey(i));
  f.reset();  // flushes the log

  auto loaded = Filter::Load(dir.File("f.bin"));
  REQUIRE(loaded.ok());
  std::string warned;
  REQUIRE(Adopt(**loaded, log, recorded, lengths, &warned).ok());
  CHECK(warned.empty());
  CHECK((*loaded)->Stats().logged_stripes == 8);
  REQUIRE((*loaded)->CompactAll().ok());
  CHECK((*loaded)->Stats().layers_max == 1);
  CHECK(Missing(**loaded, 0, admitted) == 0);
  // Had the log not been cut back, the rebuild would hold the later keys.
  uint64_t later_present = 0;
  for (uint64_t i = 30'000; i < 40'000; ++i)
    later_present += (*loaded)->Contains(UrlKey(i));
  CHECK(static_cast<double>(later_present) <= UpperTolerance(0.01, 10'000, 4));
}

TEST_CASE("A damaged or short log is refused with a message, never rebuilt from",
          "[dedup][compaction]") {
  const bool recorded = GENERATE(false, true);
  INFO((recorded ? "recorded lengths" : "cuts found by reading"));
  ScratchDir dir;
  const std::string log = dir.File("log");
  std::vector<bool> admitted;
  std::vector<uint64_t> lengths;
  SavedWithLog(dir, &admitted, &lengths).reset();

  const std::string stripe0 = internal::HashLog::PathFor(log, 0);
  const std::string stripe1 = internal::HashLog::PathFor(log, 1);
  const auto size0 = std::filesystem::file_size(stripe0);
  {  // a flipped byte in stripe 0's last block: found when a compaction reads it
    std::fstream io(stripe0, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(static_cast<std::streamoff>(size0 - 5));
    io.put('\x5a');
  }
  // Stripe 1 cut short: found on load (the stripe counts more entries).
  std::filesystem::resize_file(stripe1, std::filesystem::file_size(stripe1) - 100);

  auto loaded = Filter::Load(dir.File("f.bin"));
  REQUIRE(loaded.ok());
  std::string warned;
  REQUIRE(Adopt(**loaded, log, recorded, lengths, &warned).ok());
  INFO(warned);
  CHECK(warned.find("1 of 8 dedup stripes have no usable hash log") != std::string::npos);
  CHECK(warned.find("stripe-00001.hlog") != std::string::npos);
  CHECK((*loaded)->Stats().logged_stripes == 7);
  Status compacted = (*loaded)->CompactAll();
  CHECK(compacted.code() == Status::Code::kCorruption);
  CHECK(compacted.message().find("stripe-00000.hlog") != std::string::npos);
  CHECK(warned.find("compaction stopped for one stripe") != std::string::npos);
  CHECK(warned.find("checksum") != std::string::npos);
  const FilterStats st = (*loaded)->Stats();
  CHECK(st.compactions == 6);
  CHECK(st.compaction_failures == 1);
  CHECK(st.logged_stripes == 6);
  CHECK(st.per_stripe[0].layers > 1);  // left as grown
  CHECK(st.per_stripe[1].layers > 1);
  CHECK(Missing(**loaded, 0, admitted) == 0);
}

TEST_CASE("A recorded length that does not match the stripe is found by its compaction",
          "[dedup][compaction]") {
  ScratchDir dir;
  const std::string log = dir.File("log");
  std::vector<bool> admitted;
  std::vector<uint64_t> saved_lengths, later_lengths;
  auto f = SavedWithLog(dir, &admitted, &saved_lengths);
  // Lengths from a later flush than the save (a bug in whoever records
  // them): every stripe's log then holds entries its saved state lacks.
  for (uint64_t i = 30'000; i < 40'000; ++i) f->Insert(UrlKey(i));
  later_lengths = f->FlushLog();
  f.reset();

  auto loaded = Filter::Load(dir.File("f.bin"));
  REQUIRE(loaded.ok());
  std::string warned;
  REQUIRE(Adopt(**loaded, log, true, later_lengths, &warned).ok());
  CHECK(warned.empty());  // not read at adoption
  Status compacted = (*loaded)->CompactAll();
  INFO(warned);
  CHECK(compacted.code() == Status::Code::kCorruption);
  CHECK(warned.find("entries, the stripe") != std::string::npos);
  const FilterStats st = (*loaded)->Stats();
  CHECK(st.compactions == 0);
  CHECK(st.compaction_failures == 8);
  CHECK(Missing(**loaded, 0, admitted) == 0);
  // And a length past the file's end is refused when adopting.
  std::vector<uint64_t> too_long = saved_lengths;
  too_long[2] += 1 << 20;
  auto again = Filter::Load(dir.File("f.bin"));
  REQUIRE(again.ok());
  warned.clear();
  REQUIRE(Adopt(**again, log, true, too_long, &warned).ok());
  CHECK(warned.find("1 of 8 dedup stripes have no usable hash log") != std::string::npos);
  CHECK(warned.find("stripe-00002.hlog: is ") != std::string::npos);
  // And the wrong number of lengths is an error.
  auto third = Filter::Load(dir.File("f.bin"));
  REQUIRE(third.ok());
  std::vector<uint64_t> short_list(saved_lengths.begin(), saved_lengths.begin() + 4);
  CHECK(Adopt(**third, log, true, short_list, &warned).code() ==
        Status::Code::kInvalidArgument);
}

TEMPLATE_TEST_CASE("A library user compacts from their own key source",
                   "[dedup][compaction]", Bloom, Cuckoo) {
  constexpr uint64_t kKeys = 40'000;
  auto f = MakeFilter(Grown(TestType::kType, kKeys / 100));
  const std::vector<bool> admitted = InsertRange(*f, 0, kKeys);
  REQUIRE(f->Stats().layers_max >= 5);
  const uint64_t bytes = f->Stats().bytes;
  REQUIRE(f->Compact([&](const std::function<void(std::string_view)>& add) {
             for (uint64_t i = 0; i < kKeys; ++i) add(UrlKey(i));
           }).ok());
  CHECK(f->Stats().layers_max == 1);
  CHECK(f->Stats().bytes < bytes);
  CHECK(Missing(*f, 0, admitted) == 0);
}

TEST_CASE("StartLog checks its growth and refuses a second start",
          "[dedup][compaction]") {
  ScratchDir dir;
  auto f = MakeFilter(Grown(FilterType::kBloom, 1000));
  Status bad = f->StartLog(dir.File("log"), 1.05, nullptr);
  CHECK(bad.code() == Status::Code::kInvalidArgument);
  CHECK(bad.message().find("compact_growth") != std::string::npos);
  REQUIRE(f->StartLog(dir.File("log"), 2, nullptr).ok());
  CHECK(!f->StartLog(dir.File("log"), 2, nullptr).ok());
}

}  // namespace
}  // namespace crawler::dedup
