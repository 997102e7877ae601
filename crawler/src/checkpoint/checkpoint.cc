// Checkpoint files; see crawler/checkpoint.h.
#include "crawler/checkpoint.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "base/file_util.h"
#include "checkpoint/checkpoint_files.h"
#include "checkpoint/manifest_schema.h"
#include "output/json_fields.h"

namespace crawler::checkpoint {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using frontier::Clock;

// 2: frontier.bin in frontier/'s format v2, the engine's host state in hosts.bin.
constexpr uint64_t kManifestVersion = 2;
constexpr const char* kManifestFormat = "crawler-checkpoint";
constexpr const char* kChecksumKey = "\"manifest_xxh3\":\"";

}  // namespace

Status Damaged(const std::string& path, const std::string& what) {
  return Status::Error(Status::Code::kCorruption, path + ": " + what);
}

std::string Hex(uint64_t v) { return fmt::format("{:016x}", v); }

namespace {

// A FILE* that writes to a descriptor and hashes every byte (fopencookie).
class HashedFile {
 public:
  static Result<std::unique_ptr<HashedFile>> Create(const std::string& path,
                                                    mode_t mode) {
    auto f = std::unique_ptr<HashedFile>(new HashedFile(path));
    f->fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (f->fd_ < 0) return IoError(path, "create");
    XXH3_64bits_reset(f->state_);
    cookie_io_functions_t io{nullptr, &HashedFile::Write, nullptr, nullptr};
    f->file_ = fopencookie(f.get(), "w", io);
    if (f->file_ == nullptr) return IoError(path, "fopencookie");
    std::setvbuf(f->file_, nullptr, _IOFBF, 1 << 20);
    return f;
  }
  ~HashedFile() {
    if (file_ != nullptr) std::fclose(file_);
    if (fd_ >= 0) ::close(fd_);
    XXH3_freeState(state_);
  }
  std::FILE* file() { return file_; }
  // Flushes, fsyncs and closes; the file's size and hash.
  Status Close(uint64_t* bytes, uint64_t* hash) {
    bool ok = std::fclose(file_) == 0 && error_ == 0;
    file_ = nullptr;
    if (!ok) {
      errno = error_ != 0 ? error_ : errno;
      return IoError(path_, "write");
    }
    if (::fsync(fd_) != 0) return IoError(path_, "fsync");
    ::close(fd_);
    fd_ = -1;
    *bytes = bytes_;
    *hash = XXH3_64bits_digest(state_);
    return Status::Ok();
  }

 private:
  explicit HashedFile(std::string path)
      : path_(std::move(path)), state_(XXH3_createState()) {}
  static ssize_t Write(void* cookie, const char* buf, size_t size) {
    auto* self = static_cast<HashedFile*>(cookie);
    size_t done = 0;
    while (done < size) {
      ssize_t n = ::write(self->fd_, buf + done, size - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        self->error_ = errno;
        return -1;
      }
      done += static_cast<size_t>(n);
    }
    XXH3_64bits_update(self->state_, buf, size);
    self->bytes_ += size;
    return static_cast<ssize_t>(size);
  }

  std::string path_;
  int fd_ = -1;
  std::FILE* file_ = nullptr;
  XXH3_state_t* state_;
  uint64_t bytes_ = 0;
  int error_ = 0;
};

}  // namespace

Result<uint64_t> HashRange(const std::string& path, uint64_t from, uint64_t bytes,
                           bool sync) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return Status::Error(Status::Code::kCorruption, path + ": missing");
    return IoError(path, "open");
  }
  std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> state(
      XXH3_createState(), &XXH3_freeState);
  XXH3_64bits_reset(state.get());
  std::vector<char> buf(std::min<uint64_t>(bytes, 1 << 20));
  Status st;
  if (sync && ::fsync(fd) != 0) st = IoError(path, "fsync");
  for (uint64_t at = from, end = from + bytes; st.ok() && at < end;) {
    ssize_t n = ::pread(fd, buf.data(), std::min<uint64_t>(buf.size(), end - at),
                        static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) st = IoError(path, "read");
    if (n == 0) {
      st = Damaged(path, "ends at byte " + std::to_string(at) +
                             ", the checkpoint's range of it at " + std::to_string(end) +
                             " (truncated)");
    }
    if (n <= 0) break;
    XXH3_64bits_update(state.get(), buf.data(), static_cast<size_t>(n));
    at += static_cast<uint64_t>(n);
  }
  ::close(fd);
  if (!st.ok()) return st;
  return XXH3_64bits_digest(state.get());
}

Result<std::string> ReadWhole(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    if (errno == ENOENT)
      return Status::Error(Status::Code::kCorruption, path + ": missing");
    return IoError(path, "open");
  }
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  bool err = std::ferror(f) != 0;
  std::fclose(f);
  if (err) return IoError(path, "read");
  return out;
}

namespace {

Status Sleep(int ms) {
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return Status::Ok();
}

}  // namespace

namespace {

// The checkpoint in TMP (N+1) replaces checkpoint/ (N), which replaces
// checkpoint.prev/ (N-1). Each step is one atomic rename, so at every
// instant checkpoint/ is whole (once one was published), checkpoint.prev/
// too (once two were), and N, the newest a cluster may have committed, is
// one of them:
//   1. exchange checkpoint/ (N) and checkpoint.prev/ (N-1);
//   2. exchange TMP (N+1) and checkpoint/ (N-1);
//   3. fsync OUT, then remove TMP (now N-1).
// A crash between 1 and 2 leaves checkpoint/ older than checkpoint.prev/,
// and a resume swaps them back (RepairCutPublish). The order this replaces
// removed checkpoint.prev/ file by file before its renames: a kill -9 then
// left it part-deleted, and a damaged checkpoint/ had no fallback (a CI run
// failed with "checkpoint.prev/dedup.bin: missing").
Status Publish(const std::string& out, const std::string& tmp) {
  const std::string cur = out + "/" + kCheckpointDir,
                    prev = out + "/" + kCheckpointPrevDir;
  std::error_code ec;
  const bool has_cur = fs::exists(cur, ec), has_prev = fs::exists(prev, ec);
  Status st = has_cur && has_prev ? ExchangePaths(cur, prev) : Status::Ok();
  if (st.code() == Status::Code::kNotSupported) {
    // A file system without RENAME_EXCHANGE: the old order, whose crash
    // window (while checkpoint.prev/ is removed) the steps above close.
    fs::remove_all(prev, ec);
    if (ec)
      return Status::Error(Status::Code::kIoError,
                           prev + ": cannot remove: " + ec.message());
    st = Status::Ok();
  }
  if (!st.ok()) return st;
  if (has_cur && !fs::exists(prev, ec) && std::rename(cur.c_str(), prev.c_str()) != 0)
    return IoError(cur, "rename to " + prev);
  // checkpoint/ is now N-1 (after an exchange) or absent.
  if (fs::exists(cur, ec)) {
    st = ExchangePaths(tmp, cur);
    if (!st.ok()) return st;
  } else if (std::rename(tmp.c_str(), cur.c_str()) != 0) {
    return IoError(tmp, "rename to " + cur);
  }
  st = SyncDir(out);
  if (!st.ok()) return st;
  fs::remove_all(tmp, ec);  // a leftover is removed by the next write
  return Status::Ok();
}

// The history's image (`image`, taken at the cut) becomes TMP/history/;
// each of its files is fsynced, hashed and listed as "history/NAME".
Status MoveHistory(const std::string& image, const std::string& tmp,
                   std::map<std::string, ManifestFile>* files, uint64_t* bytes) {
  const std::string dir = tmp + "/history";
  if (std::rename(image.c_str(), dir.c_str()) != 0)
    return IoError(image, "rename to " + dir);
  std::error_code ec;
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file()) names.push_back(e.path().filename().string());
  }
  if (ec) return Status::Error(Status::Code::kIoError, dir + ": " + ec.message());
  for (const std::string& name : names) {
    const std::string path = dir + "/" + name;
    const uint64_t size = fs::file_size(path, ec);
    if (ec) return Status::Error(Status::Code::kIoError, path + ": " + ec.message());
    auto hash = HashRange(path, 0, size, /*sync=*/true);
    if (!hash.ok()) return hash.status();
    (*files)["history/" + name] = ManifestFile{size, Hex(*hash)};
    *bytes += size;
  }
  return SyncDir(dir);
}

// fsync(path); a file removed meanwhile is not an error (a cluster node
// deletes a spill file once Redis has its URLs).
Status FsyncIfPresent(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? Status::Ok() : IoError(path, "open");
  int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? Status::Ok() : IoError(path, "fsync");
}

}  // namespace

Result<CheckpointWritten> WriteCheckpoint(const std::string& out,
                                          const CheckpointInfo& info,
                                          const CheckpointSources& src) {
  auto start = std::chrono::steady_clock::now();
  const std::string tmp = out + "/" + kCheckpointTmpDir;
  std::error_code ec;
  fs::remove_all(tmp, ec);
  if (ec)
    return Status::Error(Status::Code::kIoError,
                         tmp + ": cannot remove: " + ec.message());
  if (::mkdir(tmp.c_str(), 0755) != 0) return IoError(tmp, "mkdir");

  std::map<std::string, ManifestFile> files;
  CheckpointWritten written;
  // TMP/NAME through `write`, fsynced, its size and hash recorded.
  auto file = [&](const std::string& name,
                  const std::function<Status(std::FILE*, const std::string&)>& write) {
    const std::string path = tmp + "/" + name;
    // The config is the owner's only (it names the Redis job and node).
    auto f = HashedFile::Create(path, name == "config.toml" ? 0600 : 0644);
    if (!f.ok()) return f.status();
    Status st = write((*f)->file(), path);
    uint64_t bytes = 0, hash = 0;
    if (st.ok()) st = (*f)->Close(&bytes, &hash);
    if (!st.ok()) return st;
    if (name != "MANIFEST.json") files[name] = ManifestFile{bytes, Hex(hash)};
    written.bytes += bytes;
    return Sleep(src.slow_ms);
  };
  auto text = [](const std::string& t) {
    return [&t](std::FILE* f, const std::string& path) {
      return std::fwrite(t.data(), 1, t.size(), f) == t.size() ? Status::Ok()
                                                               : IoError(path, "write");
    };
  };
  Status st = file("config.toml", text(info.config_toml));
  if (st.ok())
    st = file("dedup.bin", [&](std::FILE* f, const std::string& path) {
      Status saved = src.filter->WriteFrozen(f, path);
      // The hash log the filter's stripes count (flushed at the cut).
      return saved.ok() ? src.filter->SyncLog() : saved;
    });
  std::vector<frontier::SpillRange> linked;  // spill files linked into TMP
  if (st.ok()) {
    st = file("frontier.bin", [&](std::FILE* f, const std::string& path) {
      return frontier::WriteFrontierImage(*src.frontier, src.cut, f, path, tmp, &linked);
    });
  }
  for (size_t i = 0; st.ok() && i < linked.size(); ++i) {
    const frontier::SpillRange& r = linked[i];
    auto hash = HashRange(r.path, r.offset, r.end - r.offset, /*sync=*/true);
    if (!hash.ok()) return hash.status();
    files[fs::path(r.path).filename().string()] =
        ManifestFile{r.end - r.offset, Hex(*hash), r.offset};
  }
  if (st.ok()) st = file("hosts.bin", src.write_hosts);
  if (st.ok() && !src.history_image.empty())
    st = MoveHistory(src.history_image, tmp, &files, &written.bytes);
  if (st.ok() && src.has_outbox) st = file("outbox.txt", text(src.outbox));
  for (size_t i = 0; st.ok() && i < src.outbox_spill.size(); ++i)
    st = FsyncIfPresent(src.outbox_spill[i]);
  if (!st.ok()) return st;
  // The output the manifest points into must be on disk before it is.
  if (src.fsync_fd_warc >= 0 && ::fsync(src.fsync_fd_warc) != 0)
    return IoError(out + "/warc", "fsync");
  if (src.fsync_fd_log >= 0 && ::fsync(src.fsync_fd_log) != 0) {
    return IoError(out + "/fetch-log.jsonl", "fsync");
  }
  if (src.fsync_fd_seen >= 0 && ::fsync(src.fsync_fd_seen) != 0)
    return IoError(out + "/seen.log", "fsync");
  const std::string manifest = EncodeManifest(info, files);
  st = file("MANIFEST.json", text(manifest));
  if (st.ok()) st = SyncDir(tmp);
  if (st.ok()) st = Publish(out, tmp);
  if (!st.ok()) return st;
  written.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return written;
}

std::string EncodeManifest(const CheckpointInfo& info,
                           const std::map<std::string, ManifestFile>& files) {
  ManifestDoc m;
  m.format = kManifestFormat;
  m.version = kManifestVersion;
  m.sequence = info.sequence;
  m.created_unix =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  m.elapsed_s = info.elapsed_s;
  m.scope_hosts = info.scope_hosts;
  m.counters = output::json_fields::Flat(
      static_cast<const engine::CrawlCounts&>(info.summary),
      ManifestCounts{info.started, info.dedup.expected_false_seen, info.dedup.compactions,
                     info.dedup.compaction_s});
  m.warc = ManifestWarc{info.warc_index, info.warc_file, info.warc_bytes};
  m.fetch_log.bytes = info.fetch_log_bytes;
  m.stats_series.bytes = info.series_bytes;
  m.seen_log.bytes = info.seen_log_bytes;
  m.pause_ms = info.pause_ms;
  m.dedup_log.bytes = info.dedup_log_bytes;
  m.stats = info.stats;
  m.files = files;
  std::string text = json::serialize(json::value_from(m));
  text.pop_back();  // the closing brace: the checksum goes last
  text += std::string(",") + kChecksumKey;
  text += Hex(XXH3_64bits(text.data(), text.size())) + "\"}\n";
  return text;
}

Result<json::object> VerifyManifest(std::string_view text, const std::string& path) {
  size_t at = text.rfind(kChecksumKey);
  if (at == std::string::npos)
    return Damaged(path, "no manifest checksum (truncated or not a checkpoint)");
  size_t hex_at = at + std::strlen(kChecksumKey);
  if (text.size() < hex_at + 16 || text.substr(hex_at + 16) != "\"}\n") {
    return Damaged(path, "truncated after the checksum");
  }
  if (Hex(XXH3_64bits(text.data(), hex_at)) != text.substr(hex_at, 16)) {
    return Damaged(path, "checksum mismatch (the file was changed or damaged)");
  }
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) return Damaged(path, "not valid JSON: " + ec.message());
  if (!v.is_object()) return Damaged(path, "not a JSON object");
  json::object& o = v.as_object();
  const json::value* format = o.if_contains("format");
  if (format == nullptr || !format->is_string() ||
      format->as_string() != kManifestFormat) {
    return Status::Error(Status::Code::kBadMagic,
                         path + ": not a crawler checkpoint manifest");
  }
  const json::value* v_version = o.if_contains("version");
  uint64_t version =
      v_version ? output::json_fields::ReadLenient<uint64_t>(*v_version) : 0;
  if (version != kManifestVersion) {
    return Status::Error(Status::Code::kBadVersion,
                         path + ": checkpoint format version " + std::to_string(version) +
                             ", this build reads version " +
                             std::to_string(kManifestVersion));
  }
  for (const char* key : {"counters", "warc", "fetch_log", "files", "stats"}) {
    if (!o.contains(key) || !o.at(key).is_object())
      return Damaged(path, std::string("no \"") + key + "\" object");
  }
  return std::move(o);
}

Result<json::object> ReadManifest(const std::string& dir) {
  const std::string path = dir + "/MANIFEST.json";
  auto text = ReadWhole(path);
  if (!text.ok()) return text.status();
  return VerifyManifest(*text, path);
}

Status RepairCutPublish(const std::string& out, bool* repaired) {
  *repaired = false;
  const std::string cur = out + "/" + kCheckpointDir,
                    prev = out + "/" + kCheckpointPrevDir;
  auto sequence = [](const std::string& dir) -> int64_t {
    auto m = ReadManifest(dir);
    const json::value* seq = m.ok() ? m->if_contains("sequence") : nullptr;
    return seq != nullptr && seq->is_int64() ? seq->as_int64() : -1;
  };
  const int64_t older = sequence(cur), newer = sequence(prev);
  if (older < 0 || newer <= older) return Status::Ok();
  Status st = ExchangePaths(cur, prev);
  if (!st.ok()) return st;
  *repaired = true;
  return SyncDir(out);
}

Result<Manifest> DecodeManifest(std::string_view text, const std::string& path) {
  auto verified = VerifyManifest(text, path);
  if (!verified.ok()) return verified.status();
  auto m = output::json_fields::ReadLenient<ManifestDoc>(*verified);
  Manifest out;
  for (const auto& [name, f] : m.files) {
    if (f.xxh3.empty()) return Damaged(path, "bad entry for " + name);
  }
  out.files = std::move(m.files);
  CheckpointInfo& info = out.info;
  info.sequence = m.sequence;
  info.elapsed_s = m.elapsed_s;
  info.scope_hosts = std::move(m.scope_hosts);
  output::json_fields::ReadLenient(m.counters,
                                   static_cast<engine::CrawlCounts&>(info.summary));
  auto counts = output::json_fields::ReadLenient<ManifestCounts>(m.counters);
  info.started = counts.started;
  info.dedup = engine::DedupCarried{counts.expected_false_seen, counts.compactions,
                                    counts.compaction_s};
  info.dedup_log_bytes = std::move(m.dedup_log.bytes);
  info.warc_index = static_cast<uint32_t>(m.warc.file_index);
  info.warc_file = m.warc.file;
  if (info.warc_file.empty() || info.warc_file.find('/') != std::string::npos) {
    return Damaged(path, "bad WARC file name");
  }
  info.warc_bytes = m.warc.bytes;
  info.fetch_log_bytes = m.fetch_log.bytes;
  info.series_bytes = m.stats_series.bytes;
  info.seen_log_bytes = m.seen_log.bytes;
  info.pause_ms = m.pause_ms;
  info.stats = std::move(m.stats);
  return out;
}

}  // namespace crawler::checkpoint
