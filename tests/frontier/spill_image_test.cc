// frontier/image.h 'F' records: spill files linked beside the image and
// adopted by a restored frontier (Frontier::AdoptSpill) instead of being
// listed URL by URL and spilled again.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "frontier/image.h"

namespace crawler::frontier {
namespace {

namespace fs = std::filesystem;

std::string Encode(const Frontier& f, Clock::time_point now, const std::string& link_dir,
                   std::vector<SpillRange>* linked) {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* mem = ::open_memstream(&buf, &size);
  REQUIRE(WriteFrontierImage(f, now, mem, "mem", link_dir, linked).ok());
  std::fclose(mem);
  std::string out(buf, size);
  std::free(buf);
  return out;
}

std::unique_ptr<Frontier> Make(const std::string& spill, uint64_t ram) {
  FrontierOptions o;
  o.spill_dir = spill;
  o.max_memory_urls = ram;
  o.min_delay_s = 0;
  o.spill_chunk = 100;
  return std::move(Frontier::Create(o)).value();
}

// Pops everything (hosts opened first), in order.
std::vector<UrlEntry> Drain(Frontier& f, const std::vector<std::string>& hosts) {
  auto now = Clock::now();
  for (const std::string& h : hosts) f.OpenHost(h, std::nullopt);
  std::vector<UrlEntry> out;
  for (;;) {
    auto lease = f.Pop(now);
    REQUIRE(lease.ok());
    if (!lease->has_value()) break;
    out.push_back((*lease)->entry);
    f.Done(**lease, now, 0);
  }
  return out;
}

struct Fixture {
  std::string dir =
      (fs::temp_directory_path() / ("spill-image-" + std::to_string(::getpid())))
          .string();
  std::unique_ptr<dedup::Filter> filter =
      std::move(dedup::Filter::Create(dedup::FilterOptions{})).value();
  Fixture() {
    fs::remove_all(dir);
    fs::create_directories(dir + "/cp");
  }
  ~Fixture() { fs::remove_all(dir); }
  // 3 hosts, 12,000 URLs, depths 0-3; 50 in RAM: the rest spills (past the
  // 8,192-record write buffer, so most of it is in files).
  // A frontier under DIR/a (50 URLs in RAM) holding Fill's URLs.
  std::unique_ptr<Frontier> Filled() {
    auto f = Make(dir + "/a", 50);
    Fill(*f);
    return f;
  }
  std::vector<UrlEntry> Fill(Frontier& f) {
    std::vector<UrlEntry> all;
    for (int i = 0; i < 12000; ++i) {
      UrlEntry e{"http://h" + std::to_string(i % 3) + ".test/" + std::to_string(i),
                 static_cast<uint32_t>((i / 7) % 4), "http://h0.test/", 0};
      if (i % 5 == 0) e.attempt = 2;
      all.push_back(e);
    }
    REQUIRE(f.Admit(all, *filter).ok());
    return all;
  }
};

const std::vector<std::string> kHosts = {"http://h0.test", "http://h1.test",
                                         "http://h2.test"};

TEST_CASE(
    "Spill files linked into a checkpoint are adopted on restore: the same URLs in the "
    "same order, the same depth counts, and the source files untouched",
    "[frontier][image][spill]") {
  Fixture fx;
  auto f = fx.Filled();
  // Part of one host's file read back first, so a range starts mid-file.
  f->OpenHost("http://h1.test", std::nullopt);
  auto now = Clock::now();
  for (int i = 0; i < 300; ++i) {
    auto lease = f->Pop(now);
    REQUIRE(lease.ok());
    REQUIRE(lease->has_value());
    f->Done(**lease, now, 0);
  }
  FrontierStats before = f->Stats(now);
  REQUIRE(before.queued_disk > 7000);

  std::vector<SpillRange> linked;
  std::string bytes = Encode(*f, now, fx.dir + "/cp", &linked);
  REQUIRE(linked.size() == 3);
  bool mid_file = false;
  for (const SpillRange& r : linked) {
    CHECK(fs::exists(r.path));
    mid_file = mid_file || r.offset > 0;
  }
  CHECK(mid_file);
  // The crawl goes on after the cut: it appends to the same files (here:
  // bytes no record count covers, so `f` itself never reads them).
  for (const SpillRange& r : linked) {
    std::ofstream(r.path, std::ios::app | std::ios::binary) << std::string(1000, 'x');
  }
  std::vector<uintmax_t> sizes;
  for (const SpillRange& r : linked) sizes.push_back(fs::file_size(r.path));

  auto image = DecodeFrontierImage(bytes, "frontier.bin");
  REQUIRE(image.ok());
  CHECK(image->spills.size() == 3);
  CHECK(image->Urls() == before.queued_memory + before.queued_disk);
  image->dir = fx.dir + "/cp";
  // The same image with its files read URL by URL (a cluster node's way).
  auto copy = DecodeFrontierImage(bytes, "frontier.bin");
  REQUIRE(copy.ok());
  copy->dir = image->dir;
  REQUIRE(copy->ReadSpills().ok());
  CHECK(copy->spills.empty());
  CHECK(copy->urls.size() == image->Urls());

  auto g = Make(fx.dir + "/b", 50);
  REQUIRE(RestoreFrontier(std::move(image).value(), now, g.get()).ok());
  FrontierStats after = g->Stats(now);
  CHECK(after.queued_disk + after.queued_memory ==
        before.queued_disk + before.queued_memory);
  CHECK(after.depths == before.depths);
  // Spilled again: at most what was in RAM (the write buffer) at the cut;
  // the files' records (more than that) were adopted.
  CHECK(after.spilled <= before.queued_memory);
  CHECK(before.queued_disk > before.queued_memory);
  for (size_t i = 0; i < linked.size(); ++i)
    CHECK(fs::file_size(linked[i].path) == sizes[i]);  // never written to

  // Each host's URLs of each depth handed out in the same (FIFO) order as the
  // original's. (When a depth's RAM and disk parts meet depends on the
  // global RAM bound, so the interleaving of depths, like that of hosts, may
  // differ.)
  std::vector<UrlEntry> got = Drain(*g, kHosts), want = Drain(*f, kHosts);
  REQUIRE(got.size() == want.size());
  auto fifo = [](const std::vector<UrlEntry>& urls) {
    std::map<std::string, std::vector<std::string>> out;
    for (const UrlEntry& e : urls) {
      out[std::string(HostKey(e.url)) + " " + std::to_string(e.depth)].push_back(
          e.url + " " + std::to_string(e.attempt));
    }
    return out;
  };
  auto got_fifo = fifo(got), want_fifo = fifo(want);
  REQUIRE(got_fifo.size() == 12);  // 3 hosts x 4 depths
  for (const auto& [host_depth, urls] : want_fifo) {
    INFO(host_depth);
    CHECK(got_fifo[host_depth] == urls);
  }
  std::multiset<std::string> read, popped;
  for (const auto& [e, leased] : copy->urls) read.insert(e.url);
  for (const UrlEntry& e : got) popped.insert(e.url);
  CHECK(read == popped);
}

TEST_CASE(
    "A host that already spills when its file is adopted gets the file's URLs behind "
    "its own, one by one; without a link directory the image lists every URL",
    "[frontier][image][spill]") {
  Fixture fx;
  auto f = fx.Filled();
  auto now = Clock::now();
  std::vector<SpillRange> linked;
  auto image = DecodeFrontierImage(Encode(*f, now, fx.dir + "/cp", &linked), "f");
  REQUIRE(image.ok());
  image->dir = fx.dir + "/cp";
  auto ref = DecodeFrontierImage(Encode(*f, now, "", nullptr), "f");
  REQUIRE(ref.ok());
  CHECK(ref->spills.empty());
  CHECK(ref->urls.size() == image->Urls());

  // 10 URLs in RAM: the RAM part restored before each file spills already.
  auto g = Make(fx.dir + "/b", 10);
  REQUIRE(RestoreFrontier(std::move(image).value(), now, g.get()).ok());
  auto r = Make(fx.dir + "/r", 10);
  REQUIRE(RestoreFrontier(std::move(ref).value(), now, r.get()).ok());
  CHECK(g->Stats(now).depths == r->Stats(now).depths);
  std::multiset<std::string> got, want;
  for (const UrlEntry& e : Drain(*g, kHosts)) got.insert(e.url);
  for (const UrlEntry& e : Drain(*r, kHosts)) want.insert(e.url);
  CHECK(got.size() == 12000);
  CHECK(got == want);
}

TEST_CASE("An 'F' record that cannot be right is refused, naming what is wrong",
          "[frontier][image][spill]") {
  Fixture fx;
  auto f = fx.Filled();
  std::vector<SpillRange> linked;
  std::string bytes = Encode(*f, Clock::now(), fx.dir + "/cp", &linked);
  REQUIRE(DecodeFrontierImage(bytes, "f").ok());
  // Every truncation is refused.
  for (size_t n = 0; n < bytes.size(); n += 97) {
    auto cut = DecodeFrontierImage(bytes.substr(0, n), "x/frontier.bin");
    REQUIRE_FALSE(cut.ok());
  }
  size_t at = bytes.find("spill-0.q");
  REQUIRE(at != std::string::npos);
  std::string bad = bytes;
  bad[at + 5] = '/';  // "spill/0.q": a path, not a name
  auto r = DecodeFrontierImage(bad, "f");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("not a spill file name") != std::string::npos);
  // The record's count: after the name, offset u64 and end u64.
  bad = bytes;
  bad[at + 9 + 16] ^= 0x40;
  r = DecodeFrontierImage(bad, "f");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Status::Code::kCorruption);
  // An adopted range whose file is shorter than it: an error naming it.
  auto image = DecodeFrontierImage(bytes, "f");
  REQUIRE(image.ok());
  image->dir = fx.dir + "/cp";
  const std::string victim = fx.dir + "/cp/" + image->spills[0].range.path;
  fs::resize_file(victim, image->spills[0].range.end - 10);
  auto g = Make(fx.dir + "/b", 50);
  Status st = RestoreFrontier(std::move(image).value(), Clock::now(), g.get());
  REQUIRE_FALSE(st.ok());
  CHECK(st.message().find(victim) != std::string::npos);
}

}  // namespace
}  // namespace crawler::frontier
