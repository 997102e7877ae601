// `crawler wacz OUT -o FILE.wacz`: a crawl packaged as WACZ 1.1.1, the
// format ReplayWeb.page, Browsertrix and the Webrecorder tools exchange.
//
//   archive/<prefix>-NNNNN.warc.gz  every WARC file, stored (not deflated:
//                                   each record is its own gzip member, so
//                                   a replay seeks to it by offset)
//   indexes/index.cdx               every file's CDXJ lines (output/cdxj.h)
//                                   merged in byte order; a 304 revisit
//                                   with its capture's status, so that
//                                   ReplayWeb.page replays that capture
//                                   (docs/formats.md, "The WACZ's index")
//   pages/pages.jsonl               {"format": "json-pages-1.0", ...}, then
//                                   one line per HTML page fetched with 200:
//                                   url and ts (RFC 3339)
//   datapackage.json                each resource's name, path, bytes and
//                                   "sha256:<hex>"
//   datapackage-digest.json         the sha256 of datapackage.json
//
// libzip writes the ZIP (ZIP64 where sizes need it; a temp file renamed at
// the end). Memory stays bounded: WARCs are streamed from their files, the
// index is merged from the sorted per-file indexes into a temp file, each
// hash computed as a stream. A WARC without its index (output.cdxj = false)
// is indexed first, as `crawler index` does.
//
// A crawl that is running (its OUT/.lock is held) or did not end cleanly (a
// .cdxj.open is left: killed) is packaged as its last checkpoint has it: the
// WARC files before the checkpoint's whole, the checkpoint's file cut at
// the length it recorded (indexed from the file itself), none after it. So
// the package holds exactly what a --resume would keep.
#ifndef CRAWLER_WACZ_H_
#define CRAWLER_WACZ_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace crawler::archive {

struct WaczSummary {
  uint64_t warcs = 0;
  uint64_t records = 0;  // index lines
  // 304 revisits indexed with their capture's status (wacz.cc, ReplayStatus)
  uint64_t not_modified_resolved = 0;
  uint64_t pages = 0;
  uint64_t bytes = 0;       // of the .wacz
  uint64_t checkpoint = 0;  // packaged at this checkpoint (0: the whole crawl)
};

// `earlier`: crawls' output directories packaged with it (`--with`): the
// earlier crawls a crawl with dedup.from refers to, so that one file
// replays it (their WARC files as archive/earlier-K-<name>, their index
// lines merged into the one index).
[[nodiscard]] Result<WaczSummary> WriteWacz(const std::string& out_dir,
                                            const std::string& wacz_path,
                                            const std::string& software,
                                            const std::vector<std::string>& earlier = {});

}  // namespace crawler::archive

#endif  // CRAWLER_WACZ_H_
