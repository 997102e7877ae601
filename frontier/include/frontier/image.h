// frontier.bin: the frontier's checkpoint image, written and read here (one
// owner per format). Little-endian, through base/bytes.h:
//
//   "CRWLFRNT" | version u32 (3) | 0 u32 | record* | 'E' hosts u64 urls u64
//                                                     spills u64 (version 3)
//   record 'H': key str | open u8 | crawl_delay_s f64 | due_in_s f64
//   record 'U': leased u8 | depth u32 | redirects u32 | url str | referrer str
//   record 'R': as 'U', then attempt u32 (a URL whose fetch failed and is
//               tried again; older builds refuse the tag, naming it)
//   record 'S': as 'R', for a sitemap (UrlEntry::Kind::kSitemap)
//   record 'V': leased u8 | kind u8 (0 page, 1 sitemap) | depth u32 |
//               redirects u32 | url str | referrer str | attempt u32: a
//               revisit (UrlEntry::revisit; older builds refuse the tag)
//   record 'F': a host's spilled URLs kept as a file beside the image (3):
//               key str | name str | offset u64 | end u64 | count u64 |
//               min_depth u32 | n u32 | n x (depth u32 | count u64)
//               (SpillRange; the records [offset, end) of the file NAME in
//               the image's directory, in the spill file's own layout)
//   str := len u32 | bytes
//
// Hosts come first, then the URLs in flight (leased = 1, in Pop order), then
// the queued ones host by host in the order Pop would hand them out; a host's
// 'F' record stands where its spilled URLs come in that order. The file's
// checksum is the manifest's business (crawler/checkpoint.h, which also
// checks each 'F' file's range); the decoder checks structure: magic,
// version, record tags, lengths, the end record's counts, that every URL has
// a host key, and that an 'F' record is consistent (a plain file name, a
// range that can hold its records, depths that add up to its count).
// Version 2 images (no 'F', two counts at the end) still load. The engine's
// own per-host state (robots.txt, page counts) is a separate file it owns
// (hosts.bin).
//
// Thread-safety: WriteFrontierImage has Frontier::ForEachEntry's contract (no
// other thread changes the frontier meanwhile); the rest are pure functions.
#ifndef FRONTIER_IMAGE_H_
#define FRONTIER_IMAGE_H_

#include <cstdio>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "frontier/frontier.h"

namespace crawler::frontier {

struct FrontierImage {
  std::vector<HostImage> hosts;
  std::vector<std::pair<UrlEntry, bool>> urls;  // bool: was in flight (leased)
  // Spilled URLs kept as files ('F'): range.path is the file's name in
  // `dir`; their place in Pop order is before urls[at] (at == urls.size():
  // after the last).
  struct Spilled {
    SpillRange range;
    size_t at = 0;
  };
  std::vector<Spilled> spills;
  std::string dir;  // where the 'F' files are (the checkpoint directory)
  // Leased URLs per host key (the page counts of a resumed crawl subtract them).
  std::unordered_map<std::string, uint64_t> LeasedPerHost() const;
  // Every queued or leased URL, spilled ones included.
  uint64_t Urls() const;
  // Reads the spill files' URLs into `urls`, each in its place (for a
  // consumer that selects URLs by host, or outlives the checkpoint
  // directory: a cluster node taking shards over). Errors name the file.
  [[nodiscard]] Status ReadSpills();
};

// Writes `frontier` as of `cut` to `out`; errors name `path`. With
// `link_dir`, each host's spill file is hard-linked into it as
// "spill-N.q" and written as an 'F' record (its range appended to *linked,
// path = the link, for the manifest's checksum) instead of URL by URL; a
// file that cannot be linked (another file system) is written URL by URL.
[[nodiscard]] Status WriteFrontierImage(const Frontier& frontier, Clock::time_point cut,
                                        std::FILE* out, const std::string& path,
                                        const std::string& link_dir = "",
                                        std::vector<SpillRange>* linked = nullptr);

// Decodes a whole frontier.bin; errors (kBadMagic, kBadVersion, kCorruption)
// name `path` and what is wrong.
[[nodiscard]] Result<FrontierImage> DecodeFrontierImage(std::string_view bytes,
                                                        const std::string& path);

// Rebuilds an empty frontier from an image (hosts, then URLs, may spill;
// spill files adopted with Frontier::AdoptSpill, never changed).
[[nodiscard]] Status RestoreFrontier(FrontierImage image, Clock::time_point now,
                                     Frontier* frontier);

}  // namespace crawler::frontier

#endif  // FRONTIER_IMAGE_H_
