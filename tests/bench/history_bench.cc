// The URL history's cost (crawler/src/output/history.h, RocksDB): bytes on
// disk per URL, writes per second, a checkpoint image's time, and reading
// the due index, for N URLs shaped like a crawl's (200 hosts, paths of a
// site, the validators and capture fields a real response gives).
//   build/tests/history_bench [--urls N] [--dir DIR]     (N default 1,000,000)
// Prints numbers; asserts nothing.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>

#include "output/history.h"

namespace {

using crawler::output::DirectoryBytes;
using crawler::output::History;
using crawler::output::HistoryRecord;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void Check(const crawler::Status& st) {
  if (!st.ok()) {
    std::fprintf(stderr, "history_bench: %s\n", st.message().c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t urls = 1'000'000;
  std::string dir = "/tmp/crawler-history-bench";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--urls") == 0)
      urls = std::strtoull(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--dir") == 0) dir = argv[i + 1];
  }
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto opened = History::Open(dir + "/history");
  Check(opened.status());
  History& history = **opened;

  std::mt19937_64 rng(7);
  const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  auto random_text = [&](size_t n, const char* alphabet, size_t size) {
    std::string s(n, ' ');
    for (char& c : s) c = alphabet[rng() % size];
    return s;
  };
  auto url_of = [](uint64_t i) {
    return "https://www.host" + std::to_string(i % 200) + ".example.org/articles/" +
           std::to_string(2000 + i % 25) + "/" + std::to_string(i) + "/index.html";
  };
  uint64_t url_bytes = 0, record_bytes = 0;
  const uint64_t now_ms = 1'790'000'000'000;
  auto start = Clock::now();
  for (uint64_t i = 0; i < urls; ++i) {
    HistoryRecord r;
    r.fetched_ms = now_ms + i;
    r.status = 200;
    // nginx: "mtime-size" in hex (appended piece by piece: GCC 12's
    // -Wrestrict misfires on one long concatenation).
    r.etag = "\"";
    r.etag += random_text(8, "0123456789abcdef", 16);
    r.etag += '-';
    r.etag += random_text(5, "0123456789abcdef", 16);
    r.etag += '"';
    r.last_modified = "Fri, 27 Nov 2026 11:41:52 GMT";
    r.payload_digest = "sha1:" + random_text(32, kAlphabet, 32);
    r.record_id = "<urn:uuid:" + random_text(36, "0123456789abcdef", 16) + ">";
    r.capture_ms = r.fetched_ms;
    r.interval_ms = 86400 * 1000;
    r.due_ms = r.fetched_ms + 86'400'000 + rng() % 3'600'000;
    const std::string url = url_of(i);
    url_bytes += url.size();
    record_bytes += crawler::output::EncodeHistoryRecord(r).size();
    Check(history.Put(url, r));
  }
  const double put_s = Since(start);
  start = Clock::now();
  Check(history.Compact());
  const double compact_s = Since(start);
  const uint64_t disk = DirectoryBytes(dir + "/history");
  std::printf(
      "history, %llu URLs (URL %.0f B, record %.0f B on average): %.0f puts/s; "
      "compacted in %.1f s: %.1f MB on disk, %.1f B per URL\n",
      static_cast<unsigned long long>(urls),
      static_cast<double>(url_bytes) / static_cast<double>(urls),
      static_cast<double>(record_bytes) / static_cast<double>(urls),
      static_cast<double>(urls) / put_s, compact_s, static_cast<double>(disk) / 1e6,
      static_cast<double>(disk) / static_cast<double>(urls));

  // A checkpoint image after 1% of the URLs changed (a crawl's cut).
  for (uint64_t i = 0; i < urls / 100; ++i) {
    HistoryRecord r;
    r.fetched_ms = now_ms + urls + i;
    r.due_ms = r.fetched_ms + 86'400'000;
    Check(history.Put(url_of(i * 97 % urls), r));
  }
  start = Clock::now();
  Check(history.CheckpointTo(dir + "/image"));
  std::printf(
      "checkpoint image after %llu more puts: %.3f s (%.1f MB linked or copied)\n",
      static_cast<unsigned long long>(urls / 100), Since(start),
      static_cast<double>(DirectoryBytes(dir + "/image")) / 1e6);
  start = Clock::now();
  auto due = history.Due(now_ms + urls + 86'400'000 + 3'600'000, urls);
  Check(due.status());
  std::printf("due index: %zu URLs due read in %.2f s (%.0f URLs/s)\n", due->size(),
              Since(start), static_cast<double>(due->size()) / Since(start));
  std::filesystem::remove_all(dir);
}
