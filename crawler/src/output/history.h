// The URL history of a crawl that revisits ([recrawl]): one record per URL
// fetched, with what a revisit needs (the validators for a conditional GET,
// the last full capture for a WARC revisit record, the revisit interval and
// when the URL is next due), and an index of the URLs by due time for the
// scheduler. With dedup.payload on, it also keeps the first capture of each
// payload archived, which a response of the same payload at any URL is
// written as a revisit of (docs/formats.md, "Payloads stored once").
//
// Stored in RocksDB (Debian's librocksdb-dev), in OUT/history/:
//   column family "default"   URL -> the record (EncodeHistoryRecord)
//   column family "due"       due time (u64 big-endian ms) + URL -> ""
//   column family "payloads"  payload digest -> its first capture
//                             (EncodePayloadCapture)
// Why RocksDB (docs/url-history.md): an ordered, compressed, crash-safe store
// that holds far more than RAM, with a consistent on-disk image in
// milliseconds (rocksdb::Checkpoint hard-links the immutable table files);
// URLFrontier and OutbackCDX use it for the same jobs. The history is not
// written ahead: the live directory after a crash is discarded, and the crawl
// resumes from the image its last checkpoint holds (Restore), as the filter
// and the frontier do. So the WAL is off.
//
// Checkpoints: CheckpointTo runs in the crawl's parent process at the cut
// (RocksDB's background threads do not survive fork()): it flushes the
// memtables and hard-links the table files into a new directory, which the
// checkpoint then holds.
//
// Written by the workers when [recrawl] or dedup.payload is on (engine/recrawl.h says
// what a visit changes); the crawl's Run thread hands due URLs back to the frontier.
//
// Thread-safe: RocksDB's own, and Put/Erase keep a record and its due
// entry in step under a mutex.
#ifndef CRAWLER_SRC_OUTPUT_HISTORY_H_
#define CRAWLER_SRC_OUTPUT_HISTORY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
}  // namespace rocksdb

namespace crawler::output {

struct HistoryRecord {
  uint64_t fetched_ms = 0;  // Unix ms of the last fetch
  int32_t status = 0;       // its HTTP status (0: no response)
  std::string etag;         // validators the server sent ("": none)
  std::string last_modified;
  // The last full capture (a response record), what a revisit refers to.
  std::string payload_digest;  // "sha1:BASE32" of its payload
  std::string record_id;       // its WARC-Record-ID ("<urn:uuid:...>")
  uint64_t capture_ms = 0;     // its WARC-Date
  std::string capture_uri;     // its WARC-Target-URI ("": the record's URL)
  std::string
      content_type;  // its Content-Type header, as sent ("": none): a 304 has none
  uint64_t interval_ms = 0;             // the current revisit interval
  uint64_t due_ms = 0;                  // the next visit (0: none planned)
  uint32_t changed = 0, unchanged = 0;  // visits by outcome
  uint32_t gone = 0;                    // 404/410 on this many visits in a row
  uint64_t bytes = 0;                   // the last full capture's payload bytes
  uint32_t depth = 0;                   // the URL's link depth (its revisits keep it)
  uint8_t kind = 0;                     // frontier::UrlEntry::Kind (page, sitemap)
  // The change-rate estimate's time base: the time over which `changed` and
  // `unchanged` were observed, and the last visit that compared the page.
  uint64_t observed_ms = 0, checked_ms = 0;
  // The dated estimate's (EstimatedRate): of the `changed` visits, those
  // whose change the server dated (a Last-Modified after the one before),
  // and the time over which the page was seen not to change: the whole gap
  // of an unchanged visit, only the time since its last change (Date -
  // Last-Modified) of a dated one, the whole gap of an undated one.
  uint32_t dated = 0;
  uint64_t exposure_ms = 0;

  bool operator==(const HistoryRecord&) const = default;
};

// The first capture archived of a payload (dedup.payload): what an
// identical-payload-digest revisit at any URL refers to.
struct PayloadCapture {
  std::string uri;        // its WARC-Target-URI
  std::string record_id;  // its WARC-Record-ID
  uint64_t date_ms = 0;   // its WARC-Date
  uint64_t bytes = 0;     // the payload's length

  bool operator==(const PayloadCapture&) const = default;
};

std::string EncodePayloadCapture(const PayloadCapture& c);
// kCorruption naming `digest` for bytes that are not a capture of this version.
Result<PayloadCapture> DecodePayloadCapture(std::string_view bytes,
                                            std::string_view digest);

std::string EncodeHistoryRecord(const HistoryRecord& r);
// kCorruption naming `url` for bytes that are not a record of this version.
Result<HistoryRecord> DecodeHistoryRecord(std::string_view bytes, std::string_view url);

class History {
 public:
  using Records = std::vector<std::pair<std::string, HistoryRecord>>;

  // Opens (creating) the store in `dir`.
  static Result<std::unique_ptr<History>> Open(const std::string& dir);
  ~History();
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  // Sets the record of `url`, and its due entry (the old one removed).
  Status Put(std::string_view url, const HistoryRecord& r);
  Result<std::optional<HistoryRecord>> Get(std::string_view url) const;
  // Forgets `url` (a URL gone for good): its record and due entry.
  Status Erase(std::string_view url);
  // Up to `limit` URLs due at or before `now_ms`, earliest first, with their
  // due times.
  Result<std::vector<std::pair<std::string, uint64_t>>> Due(uint64_t now_ms,
                                                            size_t limit) const;
  // Takes up to `limit` URLs due at or before `now_ms`, earliest first, off
  // the due index: each record's due time becomes `next_due(url)` (0: none,
  // queued for a visit), in one write. Returns them, with that due time.
  Result<Records> TakeDue(uint64_t now_ms, size_t limit,
                          const std::function<uint64_t(std::string_view)>& next_due);
  // URLs due at or before `now_ms`, counted up to `cap`.
  uint64_t CountDue(uint64_t now_ms, uint64_t cap) const;
  // Records in the store (RocksDB's estimate, exact after a flush of a store
  // without deletes).
  uint64_t ApproximateCount() const;
  // The first capture of the payload whose digest ("sha1:BASE32") is
  // `digest`, if one was archived.
  Result<std::optional<PayloadCapture>> FirstCapture(std::string_view digest) const;
  // Keeps `c` as the first capture of `digest`'s payload, unless one is kept
  // already (the first stays: two workers may archive one payload at once).
  Status AddCapture(std::string_view digest, const PayloadCapture& c);
  // Payloads kept (an estimate, as ApproximateCount).
  uint64_t ApproximatePayloads() const;
  // Flushes the memtables and writes a consistent image of the store to
  // `dir`, which must not exist (hard links where the file system allows).
  Status CheckpointTo(const std::string& dir);
  // Replaces the store in `live_dir` with the image in `checkpoint_dir` (a
  // copy; the image is left as it was). REQUIRES: no History open on
  // `live_dir`.
  static Status Restore(const std::string& checkpoint_dir, const std::string& live_dir);
  // Flushes and compacts everything (for measuring the size on disk).
  Status Compact();
  // Calls f(url, record) for every record, in URL order; stops at the first
  // error f returns.
  Status ForEach(
      const std::function<Status(std::string_view, const HistoryRecord&)>& f) const;
  // A cluster node's shards on the move (docs/cluster.md): the records of an
  // image under `image_dir` (a checkpoint's history/, left as it was) whose
  // URL `want`s, read through a scratch copy in `scratch_dir` (removed).
  static Result<Records> ReadImage(const std::string& image_dir,
                                   const std::string& scratch_dir,
                                   const std::function<bool(std::string_view)>& want);

  const std::string& dir() const { return dir_; }

 private:
  History(std::string dir, rocksdb::DB* db,
          std::vector<rocksdb::ColumnFamilyHandle*> cfs);
  Status Delete(std::string_view url, uint64_t due_ms);

  const std::string dir_;
  rocksdb::DB* db_;
  std::vector<rocksdb::ColumnFamilyHandle*> cfs_;  // default, due, payloads
  std::mutex mu_;  // Put/Erase: a record with its due entry; AddCapture
};

// Bytes of the files under `dir` (the store's size on disk).
uint64_t DirectoryBytes(const std::string& dir);

}  // namespace crawler::output

#endif  // CRAWLER_SRC_OUTPUT_HISTORY_H_
