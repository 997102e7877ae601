// WARC record compression: zlib vs libdeflate vs ISA-L (igzip), one gzip
// member per record, as the WARC writer makes them (docs/benchmarks.md).
//
//   python3 scripts/bench_site.py /tmp/site 2000     # the crawl bench's pages
//   build/tests/gzip_bench /tmp/site/p [REPEAT]
//
// Each file becomes one record (a ~450-byte WARC + HTTP head, then the file),
// compressed alone on one thread; every member is inflated again by zlib and
// compared, so each row is a standard gzip stream. Prints, per library and
// level: output bytes, size relative to zlib level 6, MB/s of input. Sample
// (2,000 bench_site pages, 20.5 MB, this 2-core VM, best of 5):
//
//   library     level      bytes  vs zlib-6     MB/s
//   zlib            6    4442892     1.0000     49.1
//   libdeflate      5    4608789     1.0373    109.2
//   libdeflate      6    4494965     1.0117     88.2
//   libdeflate      7    4459703     1.0038     73.0
//   isa-l           1    5469039     1.2310    389.8
//   isa-l           3    5061284     1.1392    248.6
#include <libdeflate.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#ifdef CRAWLER_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

namespace {

using Compress = std::function<std::string(const std::string&, int)>;

std::string Zlib(const std::string& in, int level) {
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return {};
  std::string out(deflateBound(&z, static_cast<uLong>(in.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  return rc == Z_STREAM_END ? out : std::string();
}

std::string Libdeflate(const std::string& in, int level) {
  static thread_local libdeflate_compressor* c = nullptr;
  static thread_local int c_level = -1;
  if (c_level != level) {
    if (c != nullptr) libdeflate_free_compressor(c);
    c = libdeflate_alloc_compressor(level);
    c_level = level;
  }
  std::string out(libdeflate_gzip_compress_bound(c, in.size()), '\0');
  size_t n = libdeflate_gzip_compress(c, in.data(), in.size(), out.data(), out.size());
  out.resize(n);
  return out;
}

#ifdef CRAWLER_HAVE_ISAL
std::string Isal(const std::string& in, int level) {
  static const uint32_t kLevelBuf[] = {ISAL_DEF_LVL0_DEFAULT, ISAL_DEF_LVL1_DEFAULT,
                                       ISAL_DEF_LVL2_DEFAULT, ISAL_DEF_LVL3_DEFAULT};
  std::vector<uint8_t> level_buf(kLevelBuf[level]);
  isal_zstream s;
  isal_deflate_stateless_init(&s);
  s.level = static_cast<uint32_t>(level);
  s.level_buf = level_buf.data();
  s.level_buf_size = static_cast<uint32_t>(level_buf.size());
  s.gzip_flag = IGZIP_GZIP;
  s.end_of_stream = 1;
  s.flush = NO_FLUSH;
  std::string out(in.size() + in.size() / 8 + 1024, '\0');
  s.next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(in.data()));
  s.avail_in = static_cast<uint32_t>(in.size());
  s.next_out = reinterpret_cast<uint8_t*>(out.data());
  s.avail_out = static_cast<uint32_t>(out.size());
  if (isal_deflate_stateless(&s) != COMP_OK) return {};
  out.resize(s.total_out);
  return out;
}
#endif

bool Inflates(const std::string& member, const std::string& want) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return false;
  std::string got(want.size() + 1, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(member.data()));
  z.avail_in = static_cast<uInt>(member.size());
  z.next_out = reinterpret_cast<Bytef*>(got.data());
  z.avail_out = static_cast<uInt>(got.size());
  int rc = inflate(&z, Z_FINISH);
  got.resize(got.size() - z.avail_out);
  inflateEnd(&z);
  return rc == Z_STREAM_END && got == want;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gzip_bench DIR [REPEAT]\n");
    return 2;
  }
  int repeat = argc > 2 ? std::atoi(argv[2]) : 3;
  std::vector<std::string> records;
  size_t input = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(argv[1])) {
    if (!e.is_regular_file()) continue;
    std::ifstream f(e.path(), std::ios::binary);
    std::string body((std::istreambuf_iterator<char>(f)),
                     std::istreambuf_iterator<char>());
    // A WARC response record's heads, of the usual size.
    std::string head =
        "WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: "
        "<urn:uuid:6f0c2b7e-3c1d-4b8e-9a52-7d1e0f6a9b31>\r\nWARC-Date: "
        "2026-11-24T03:00:00Z\r\nWARC-Target-URI: http://127.0.0.1:8080/" +
        e.path().filename().string() +
        "\r\nWARC-Payload-Digest: sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\r\n"
        "WARC-Block-Digest: sha1:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB\r\n"
        "Content-Type: application/http;msgtype=response\r\nContent-Length: " +
        std::to_string(body.size()) +
        "\r\n\r\nHTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: text/html\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\n\r\n";
    records.push_back(head + body + "\r\n\r\n");
    input += records.back().size();
  }
  if (records.empty()) {
    std::fprintf(stderr, "gzip_bench: no files under %s\n", argv[1]);
    return 2;
  }
  struct Row {
    const char* name;
    Compress fn;
    int level;
  };
  std::vector<Row> rows;
  for (int l : {1, 3, 6, 9}) rows.push_back({"zlib", Zlib, l});
  for (int l : {1, 3, 4, 5, 6, 7, 9, 12}) rows.push_back({"libdeflate", Libdeflate, l});
#ifdef CRAWLER_HAVE_ISAL
  for (int l : {0, 1, 2, 3}) rows.push_back({"isa-l", Isal, l});
#endif
  std::printf("%zu records, %.1f MB in, best of %d runs\n", records.size(),
              static_cast<double>(input) / 1e6, repeat);
  std::printf("%-10s %6s %10s %10s %8s\n", "library", "level", "bytes", "vs zlib-6",
              "MB/s");
  std::vector<std::pair<size_t, double>> results;  // bytes, MB/s
  size_t zlib6 = 0;
  for (const Row& r : rows) {
    size_t bytes = 0;
    double best = 1e100;
    for (int k = 0; k < repeat; ++k) {
      bytes = 0;
      auto t0 = std::chrono::steady_clock::now();
      for (const std::string& rec : records) bytes += r.fn(rec, r.level).size();
      best = std::min(
          best,
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    for (const std::string& rec : records) {
      if (!Inflates(r.fn(rec, r.level), rec)) {
        std::fprintf(stderr, "gzip_bench: %s level %d: not a valid gzip member\n", r.name,
                     r.level);
        return 1;
      }
    }
    if (std::string(r.name) == "zlib" && r.level == 6) zlib6 = bytes;
    results.emplace_back(bytes, static_cast<double>(input) / 1e6 / best);
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    std::printf("%-10s %6d %10zu %10.4f %8.1f\n", rows[i].name, rows[i].level,
                results[i].first,
                static_cast<double>(results[i].first) / static_cast<double>(zlib6),
                results[i].second);
  }
  return 0;
}
