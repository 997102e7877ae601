// frontier.bin: the frontier's checkpoint image, written and read here (one
// owner per format). Little-endian, through base/bytes.h:
//
//   "CRWLFRNT" | version u32 (2) | 0 u32 | record* | 'E' hosts u64 urls u64
//   record 'H': key str | open u8 | crawl_delay_s f64 | due_in_s f64
//   record 'U': leased u8 | depth u32 | redirects u32 | url str | referrer str
//   record 'R': as 'U', then attempt u32 (a URL whose fetch failed and is
//               tried again; older builds refuse the tag, naming it)
//   record 'S': as 'R', for a sitemap (UrlEntry::Kind::kSitemap)
//   str := len u32 | bytes
//
// Hosts come first, then the URLs in flight (leased = 1, in Pop order), then
// the queued ones host by host in the order Pop would hand them out. The file's
// checksum is the manifest's business (crawler/checkpoint.h); the decoder
// checks structure: magic, version, record tags, lengths, the end record's
// counts, and that every URL has a host key. The engine's own per-host state
// (robots.txt, page counts) is a separate file it owns (hosts.bin).
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
  // Leased URLs per host key (the page counts of a resumed crawl subtract them).
  std::unordered_map<std::string, uint64_t> LeasedPerHost() const;
};

// Writes `frontier` as of `cut` to `out`; errors name `path`.
[[nodiscard]] Status WriteFrontierImage(const Frontier& frontier, Clock::time_point cut,
                                        std::FILE* out, const std::string& path);

// Decodes a whole frontier.bin; errors (kBadMagic, kBadVersion, kCorruption)
// name `path` and what is wrong.
[[nodiscard]] Result<FrontierImage> DecodeFrontierImage(std::string_view bytes,
                                                        const std::string& path);

// Rebuilds an empty frontier from an image (hosts, then URLs; may spill).
[[nodiscard]] Status RestoreFrontier(FrontierImage image, Clock::time_point now,
                                     Frontier* frontier);

}  // namespace crawler::frontier

#endif  // FRONTIER_IMAGE_H_
