// Room archive/ (docs/architecture.md): dedup.from, the captures earlier
// crawls archived, read from their indexes so that a new crawl writes a
// payload they hold as a revisit of their capture (docs/formats.md,
// "Payloads stored once"). A source is one of:
//   - a crawl's output directory: its OUT/warc/*.cdxj (a WARC file without
//     its index, as a killed crawl's last, is indexed from the file);
//   - a WACZ: its indexes/index.cdx (libzip);
//   - a CDXJ file (pywb's, warcio's or ours).
// Only full 200 captures count (not revisits, not other statuses); the
// index gives no record id, so a revisit of one names the capture by
// WARC-Refers-To-Target-URI and WARC-Refers-To-Date alone (WARC 1.1 makes
// WARC-Refers-To optional).
#ifndef CRAWLER_SRC_ARCHIVE_EARLIER_H_
#define CRAWLER_SRC_ARCHIVE_EARLIER_H_

#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"

namespace crawler::archive {

struct EarlierCapture {
  std::string digest;    // "sha1:BASE32"
  std::string uri;       // its WARC-Target-URI
  uint64_t date_ms = 0;  // its WARC-Date (the index's 14-digit timestamp)
};

// Calls f for each full 200 capture `source`'s index lists; stops at f's
// first error. kInvalid naming `source` for a path that is none of the
// three, kCorruption naming it and the line for a line that is not CDXJ.
[[nodiscard]] Status ReadEarlierCaptures(
    const std::string& source, const std::function<Status(const EarlierCapture&)>& f);

}  // namespace crawler::archive

#endif  // CRAWLER_SRC_ARCHIVE_EARLIER_H_
