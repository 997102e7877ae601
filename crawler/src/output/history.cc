// See output/history.h.
#include "output/history.h"

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_batch.h>

#include <filesystem>

#include "base/bytes.h"

namespace crawler::output {
namespace {

namespace fs = std::filesystem;

// 2 adds `dated` and `exposure_ms`; version 1 records read with both 0.
// 3 adds `content_type`; earlier records read with none.
constexpr uint8_t kRecordVersion = 3;
constexpr uint8_t kCaptureVersion = 1;
constexpr size_t kPayloads = 2;  // cfs_[kPayloads]: "payloads"

Status FromRocks(const rocksdb::Status& s, const std::string& context) {
  if (s.ok()) return Status::Ok();
  return Status::Error(
      s.IsCorruption() ? Status::Code::kCorruption : Status::Code::kIoError,
      context + ": " + s.ToString());
}

// Big-endian, so the keys sort by time.
std::string DueKey(uint64_t due_ms, std::string_view url) {
  std::string key(8, '\0');
  for (int i = 0; i < 8; ++i)
    key[static_cast<size_t>(i)] = static_cast<char>((due_ms >> (56 - 8 * i)) & 0xff);
  key.append(url);
  return key;
}

uint64_t DueOf(std::string_view key) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8 && i < key.size(); ++i)
    v = (v << 8) | static_cast<uint8_t>(key[i]);
  return v;
}

}  // namespace

std::string EncodePayloadCapture(const PayloadCapture& c) {
  ByteWriter w;
  w.U8(kCaptureVersion);
  w.Str(c.uri);
  w.Str(c.record_id);
  w.U64(c.date_ms);
  w.U64(c.bytes);
  return std::string(w.view());
}

Result<PayloadCapture> DecodePayloadCapture(std::string_view bytes,
                                            std::string_view digest) {
  ByteReader in(bytes);
  PayloadCapture c;
  const uint8_t version = in.U8();
  c.uri = in.Str();
  c.record_id = in.Str();
  c.date_ms = in.U64();
  c.bytes = in.U64();
  if (!in.ok() || !in.AtEnd() || version != kCaptureVersion) {
    return Status::Error(Status::Code::kCorruption,
                         "payload capture of " + std::string(digest) + ": version " +
                             std::to_string(version) + " of " +
                             std::to_string(bytes.size()) + " bytes, this build reads " +
                             "version " + std::to_string(kCaptureVersion));
  }
  return c;
}

std::string EncodeHistoryRecord(const HistoryRecord& r) {
  ByteWriter w;
  w.U8(kRecordVersion);
  w.U64(r.fetched_ms);
  w.U32(static_cast<uint32_t>(r.status));
  w.Str(r.etag);
  w.Str(r.last_modified);
  w.Str(r.payload_digest);
  w.Str(r.record_id);
  w.U64(r.capture_ms);
  w.Str(r.capture_uri);
  w.U64(r.interval_ms);
  w.U64(r.due_ms);
  w.U32(r.changed);
  w.U32(r.unchanged);
  w.U32(r.gone);
  w.U64(r.bytes);
  w.U32(r.depth);
  w.U8(r.kind);
  w.U64(r.observed_ms);
  w.U64(r.checked_ms);
  w.U32(r.dated);
  w.U64(r.exposure_ms);
  w.Str(r.content_type);
  return std::string(w.view());
}

Result<HistoryRecord> DecodeHistoryRecord(std::string_view bytes, std::string_view url) {
  ByteReader in(bytes);
  HistoryRecord r;
  const uint8_t version = in.U8();
  if (in.ok() && (version < 1 || version > kRecordVersion)) {
    return Status::Error(Status::Code::kBadVersion,
                         "history record of " + std::string(url) + ": version " +
                             std::to_string(version) + ", this build reads version " +
                             std::to_string(kRecordVersion));
  }
  r.fetched_ms = in.U64();
  r.status = static_cast<int32_t>(in.U32());
  r.etag = in.Str();
  r.last_modified = in.Str();
  r.payload_digest = in.Str();
  r.record_id = in.Str();
  r.capture_ms = in.U64();
  r.capture_uri = in.Str();
  r.interval_ms = in.U64();
  r.due_ms = in.U64();
  r.changed = in.U32();
  r.unchanged = in.U32();
  r.gone = in.U32();
  r.bytes = in.U64();
  r.depth = in.U32();
  r.kind = in.U8();
  r.observed_ms = in.U64();
  r.checked_ms = in.U64();
  if (version >= 2) {
    r.dated = in.U32();
    r.exposure_ms = in.U64();
  }
  if (version >= 3) r.content_type = in.Str();
  if (!in.ok() || !in.AtEnd()) {
    return Status::Error(Status::Code::kCorruption,
                         "history record of " + std::string(url) +
                             ": truncated or malformed (" + std::to_string(bytes.size()) +
                             " bytes)");
  }
  return r;
}

History::History(std::string dir, rocksdb::DB* db,
                 std::vector<rocksdb::ColumnFamilyHandle*> cfs)
    : dir_(std::move(dir)), db_(db), cfs_(std::move(cfs)) {}

History::~History() {
  for (rocksdb::ColumnFamilyHandle* h : cfs_) db_->DestroyColumnFamilyHandle(h);
  delete db_;
}

Result<std::unique_ptr<History>> History::Open(const std::string& dir) {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.create_missing_column_families = true;
  options.compression = rocksdb::kLZ4Compression;
  options.bottommost_compression = rocksdb::kZSTD;
  options.max_background_jobs = 2;
  // RocksDB keeps every table file open by default (-1): a large history
  // would take descriptors the crawl's connections and spool files need.
  // 256 table files open at most (its table cache reopens the others).
  options.max_open_files = 256;
  const rocksdb::ColumnFamilyOptions cf(options);
  std::vector<rocksdb::ColumnFamilyDescriptor> families = {
      {rocksdb::kDefaultColumnFamilyName, cf}, {"due", cf}, {"payloads", cf}};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  rocksdb::Status s =
      rocksdb::DB::Open(rocksdb::DBOptions(options), dir, families, &handles, &db);
  if (!s.ok()) return FromRocks(s, dir + ": cannot open the URL history");
  return std::unique_ptr<History>(new History(dir, db, std::move(handles)));
}

Result<std::optional<HistoryRecord>> History::Get(std::string_view url) const {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), cfs_[0],
                               rocksdb::Slice(url.data(), url.size()), &value);
  if (s.IsNotFound()) return std::optional<HistoryRecord>();
  if (!s.ok()) return FromRocks(s, dir_ + ": read of " + std::string(url));
  auto r = DecodeHistoryRecord(value, url);
  if (!r.ok()) return r.status().WithContext(dir_);
  return std::optional<HistoryRecord>(std::move(r).value());
}

Status History::Put(std::string_view url, const HistoryRecord& r) {
  std::lock_guard<std::mutex> lock(mu_);
  auto old = Get(url);
  if (!old.ok()) return old.status();
  rocksdb::WriteBatch batch;
  const uint64_t old_due = old->has_value() ? (*old)->due_ms : 0;
  if (old_due != 0 && old_due != r.due_ms) batch.Delete(cfs_[1], DueKey(old_due, url));
  if (r.due_ms != 0) batch.Put(cfs_[1], DueKey(r.due_ms, url), "");
  batch.Put(cfs_[0], rocksdb::Slice(url.data(), url.size()), EncodeHistoryRecord(r));
  rocksdb::WriteOptions write;
  write.disableWAL = true;  // the checkpoint's image is what survives a crash
  return FromRocks(db_->Write(write, &batch), dir_ + ": write of " + std::string(url));
}

Status History::Erase(std::string_view url) {
  std::lock_guard<std::mutex> lock(mu_);
  auto old = Get(url);
  if (!old.ok()) return old.status();
  if (!old->has_value()) return Status::Ok();
  rocksdb::WriteBatch batch;
  if ((*old)->due_ms != 0) batch.Delete(cfs_[1], DueKey((*old)->due_ms, url));
  batch.Delete(cfs_[0], rocksdb::Slice(url.data(), url.size()));
  rocksdb::WriteOptions write;
  write.disableWAL = true;
  return FromRocks(db_->Write(write, &batch), dir_ + ": erase of " + std::string(url));
}

Result<std::vector<std::pair<std::string, uint64_t>>> History::Due(uint64_t now_ms,
                                                                   size_t limit) const {
  std::vector<std::pair<std::string, uint64_t>> out;
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(rocksdb::ReadOptions(), cfs_[1]));
  for (it->SeekToFirst(); it->Valid() && out.size() < limit; it->Next()) {
    const rocksdb::Slice key = it->key();
    if (key.size() < 8) continue;
    const uint64_t due = DueOf(std::string_view(key.data(), key.size()));
    if (due > now_ms) break;
    out.emplace_back(std::string(key.data() + 8, key.size() - 8), due);
  }
  if (!it->status().ok()) return FromRocks(it->status(), dir_ + ": due index");
  return out;
}

Result<History::Records> History::TakeDue(
    uint64_t now_ms, size_t limit,
    const std::function<uint64_t(std::string_view)>& next_due) {
  std::lock_guard<std::mutex> lock(mu_);
  Records out;
  rocksdb::WriteBatch batch;
  {
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(rocksdb::ReadOptions(), cfs_[1]));
    for (it->SeekToFirst(); it->Valid() && out.size() < limit; it->Next()) {
      const rocksdb::Slice key = it->key();
      if (key.size() < 8) continue;
      if (DueOf(std::string_view(key.data(), key.size())) > now_ms) break;
      const std::string url(key.data() + 8, key.size() - 8);
      batch.Delete(cfs_[1], key);
      auto r = Get(url);
      if (!r.ok()) return r.status();
      if (!r->has_value()) continue;  // an index entry without its record
      HistoryRecord& record = out.emplace_back(url, std::move(**r)).second;
      record.due_ms = next_due(url);
      if (record.due_ms != 0) batch.Put(cfs_[1], DueKey(record.due_ms, url), "");
      batch.Put(cfs_[0], url, EncodeHistoryRecord(record));
    }
    if (!it->status().ok()) return FromRocks(it->status(), dir_ + ": due index");
  }
  rocksdb::WriteOptions write;
  write.disableWAL = true;
  Status st = FromRocks(db_->Write(write, &batch), dir_ + ": due URLs taken");
  if (!st.ok()) return st;
  return out;
}

uint64_t History::CountDue(uint64_t now_ms, uint64_t cap) const {
  uint64_t n = 0;
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(rocksdb::ReadOptions(), cfs_[1]));
  for (it->SeekToFirst(); it->Valid() && n < cap; it->Next()) {
    const rocksdb::Slice key = it->key();
    if (DueOf(std::string_view(key.data(), key.size())) > now_ms) break;
    ++n;
  }
  return n;
}

uint64_t History::ApproximateCount() const {
  uint64_t n = 0;
  db_->GetIntProperty(cfs_[0], "rocksdb.estimate-num-keys", &n);
  return n;
}

Result<std::optional<PayloadCapture>> History::FirstCapture(
    std::string_view digest) const {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), cfs_[kPayloads],
                               rocksdb::Slice(digest.data(), digest.size()), &value);
  if (s.IsNotFound()) return std::optional<PayloadCapture>();
  if (!s.ok()) return FromRocks(s, dir_ + ": read of " + std::string(digest));
  auto c = DecodePayloadCapture(value, digest);
  if (!c.ok()) return c.status().WithContext(dir_);
  return std::optional<PayloadCapture>(std::move(c).value());
}

Status History::AddCapture(std::string_view digest, const PayloadCapture& c) {
  std::lock_guard<std::mutex> lock(mu_);
  auto old = FirstCapture(digest);
  if (!old.ok() || old->has_value()) return old.status();
  rocksdb::WriteOptions write;
  write.disableWAL = true;  // as Put
  return FromRocks(
      db_->Put(write, cfs_[kPayloads], rocksdb::Slice(digest.data(), digest.size()),
               EncodePayloadCapture(c)),
      dir_ + ": write of " + std::string(digest));
}

uint64_t History::ApproximatePayloads() const {
  uint64_t n = 0;
  db_->GetIntProperty(cfs_[kPayloads], "rocksdb.estimate-num-keys", &n);
  return n;
}

Status History::CheckpointTo(const std::string& dir) {
  rocksdb::FlushOptions flush;
  Status st = FromRocks(db_->Flush(flush, cfs_), dir_ + ": flush");
  if (!st.ok()) return st;
  rocksdb::Checkpoint* raw = nullptr;
  st = FromRocks(rocksdb::Checkpoint::Create(db_, &raw), dir_ + ": checkpoint");
  if (!st.ok()) return st;
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  return FromRocks(checkpoint->CreateCheckpoint(dir), dir + ": checkpoint of " + dir_);
}

Status History::Compact() {
  Status st = FromRocks(db_->Flush(rocksdb::FlushOptions(), cfs_), dir_ + ": flush");
  for (rocksdb::ColumnFamilyHandle* h : cfs_) {
    if (!st.ok()) return st;
    st = FromRocks(db_->CompactRange(rocksdb::CompactRangeOptions(), h, nullptr, nullptr),
                   dir_ + ": compaction");
  }
  return st;
}

Status History::ForEach(
    const std::function<Status(std::string_view, const HistoryRecord&)>& f) const {
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(rocksdb::ReadOptions(), cfs_[0]));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string_view url(it->key().data(), it->key().size());
    auto r = DecodeHistoryRecord(std::string_view(it->value().data(), it->value().size()),
                                 url);
    if (!r.ok()) return r.status().WithContext(dir_);
    Status st = f(url, *r);
    if (!st.ok()) return st;
  }
  return FromRocks(it->status(), dir_ + ": records");
}

Result<History::Records> History::ReadImage(
    const std::string& image_dir, const std::string& scratch_dir,
    const std::function<bool(std::string_view)>& want) {
  // RocksDB writes beside what it opens (LOG, a new MANIFEST), even to read:
  // the image is another node's checkpoint, so it is opened through a copy
  // (the table files hard-linked).
  Records out;
  Status st = Restore(image_dir, scratch_dir);
  if (st.ok()) {  // the store is closed at the end of this block
    auto scratch = Open(scratch_dir);
    if (scratch.ok()) {
      st = (*scratch)->ForEach([&](std::string_view url, const HistoryRecord& r) {
        if (want(url)) out.emplace_back(std::string(url), r);
        return Status::Ok();
      });
    } else {
      st = scratch.status();
    }
  }
  std::error_code ec;
  fs::remove_all(scratch_dir, ec);  // whatever happened, nothing left behind
  if (!st.ok()) return st;
  return out;
}

Status History::Restore(const std::string& checkpoint_dir, const std::string& live_dir) {
  std::error_code ec;
  if (!fs::exists(checkpoint_dir + "/CURRENT", ec)) {
    return Status::Error(Status::Code::kCorruption,
                         checkpoint_dir + ": not a URL history image (no CURRENT)");
  }
  const std::string tmp = live_dir + ".restoring";
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  for (const fs::directory_entry& e : fs::directory_iterator(checkpoint_dir, ec)) {
    const fs::path to = fs::path(tmp) / e.path().filename();
    // Table files never change: a link; the rest (MANIFEST, CURRENT,
    // OPTIONS) RocksDB may write to: a copy.
    if (e.path().extension() == ".sst") fs::create_hard_link(e.path(), to, ec);
    if (e.path().extension() != ".sst" || ec) {
      ec.clear();
      fs::copy_file(e.path(), to, fs::copy_options::overwrite_existing, ec);
    }
    if (ec) break;
  }
  if (!ec) fs::remove_all(live_dir, ec);
  if (!ec) fs::rename(tmp, live_dir, ec);
  if (ec) {
    return Status::Error(
        Status::Code::kIoError,
        live_dir + ": cannot restore from " + checkpoint_dir + ": " + ec.message());
  }
  return Status::Ok();
}

uint64_t DirectoryBytes(const std::string& dir) {
  uint64_t bytes = 0;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec)) bytes += e.file_size(ec);
  }
  return bytes;
}

}  // namespace crawler::output
