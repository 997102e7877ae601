// Loading a checkpoint (LoadCheckpoint): every file verified against the
// manifest while it is read; see crawler/checkpoint.h.
#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "base/file_util.h"
#include "checkpoint/checkpoint_files.h"
#include "crawler/checkpoint.h"

namespace crawler::checkpoint {
namespace {

namespace fs = std::filesystem;

// A FILE* that reads a descriptor and hashes every byte it hands out.
class HashedReader {
 public:
  explicit HashedReader(int fd) : fd_(fd), state_(XXH3_createState()) {
    XXH3_64bits_reset(state_);
    cookie_io_functions_t io{&HashedReader::Read, nullptr, nullptr, nullptr};
    file_ = fopencookie(this, "r", io);
    if (file_ != nullptr) std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
  }
  ~HashedReader() {
    if (file_ != nullptr) std::fclose(file_);
    XXH3_freeState(state_);
  }
  std::FILE* file() { return file_; }
  // Reads whatever is left (so the hash covers the whole file).
  void Drain() {
    char buf[65536];
    while (std::fread(buf, 1, sizeof(buf), file_) > 0) {
    }
  }
  uint64_t bytes() const { return bytes_; }
  uint64_t hash() const { return XXH3_64bits_digest(state_); }

 private:
  static ssize_t Read(void* cookie, char* buf, size_t size) {
    auto* self = static_cast<HashedReader*>(cookie);
    ssize_t n;
    do {
      n = ::read(self->fd_, buf, size);
    } while (n < 0 && errno == EINTR);
    if (n > 0) {
      XXH3_64bits_update(self->state_, buf, static_cast<size_t>(n));
      self->bytes_ += static_cast<uint64_t>(n);
    }
    return n;
  }
  int fd_;
  std::FILE* file_ = nullptr;
  XXH3_state_t* state_;
  uint64_t bytes_ = 0;
};

// Compares a file's size and hash with what the manifest recorded.
Status CheckFile(const Manifest& m, const std::string& dir, const std::string& name,
                 uint64_t bytes, uint64_t hash) {
  auto f = m.files.find(name);
  if (f == m.files.end()) return Damaged(dir + "/MANIFEST.json", "no entry for " + name);
  if (bytes != f->second.bytes) {
    return Damaged(dir + "/" + name,
                   "is " + std::to_string(bytes) + " bytes, the manifest says " +
                       std::to_string(f->second.bytes) + " (truncated or extended)");
  }
  if (Hex(hash) != f->second.xxh3) {
    return Damaged(dir + "/" + name,
                   "checksum mismatch (the file was changed or damaged)");
  }
  return Status::Ok();
}

// DIR/dedup.bin, read and hashed in one pass; the size and checksum are
// checked before the loader's own verdict (the clearer message).
Result<std::unique_ptr<dedup::Filter>> LoadFilter(const Manifest& m,
                                                  const std::string& dir) {
  const std::string path = dir + "/dedup.bin";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return Status::Error(Status::Code::kCorruption, path + ": missing");
    return IoError(path, "open");
  }
  Result<std::unique_ptr<dedup::Filter>> filter =
      Status::Error(Status::Code::kIoError, path + ": fopencookie");
  uint64_t bytes = 0, hash = 0;
  {
    HashedReader reader(fd);
    if (reader.file() != nullptr) {
      filter = dedup::Filter::Read(reader.file(), path);
      reader.Drain();
      bytes = reader.bytes();
      hash = reader.hash();
    }
  }
  ::close(fd);
  if (filter.ok() || filter.status().code() != Status::Code::kIoError) {
    Status st = CheckFile(m, dir, "dedup.bin", bytes, hash);
    if (!st.ok()) return st;
  }
  return filter;
}

// A spill file's range ('F' in frontier.bin) against its manifest entry.
Status CheckSpill(const Manifest& m, const std::string& dir,
                  const frontier::SpillRange& r) {
  const std::string path = dir + "/" + r.path;
  auto f = m.files.find(r.path);
  if (f == m.files.end())
    return Damaged(dir + "/MANIFEST.json", "no entry for " + r.path);
  if (f->second.from != r.offset || f->second.bytes != r.end - r.offset) {
    return Damaged(path, "frontier.bin's range of it does not match the manifest's");
  }
  auto hash = HashRange(path, r.offset, r.end - r.offset, /*sync=*/false);
  if (!hash.ok()) return hash.status();
  if (Hex(*hash) != f->second.xxh3)
    return Damaged(path, "checksum mismatch (the file was changed or damaged)");
  return Status::Ok();
}

// DIR/history/'s files against their manifest entries; true if it has any.
Result<bool> CheckHistory(const Manifest& m, const std::string& dir) {
  bool any = false;
  for (const auto& [name, f] : m.files) {
    if (name.rfind("history/", 0) != 0) continue;
    any = true;
    const std::string path = dir + "/" + name;
    std::error_code ec;
    const uint64_t size = fs::file_size(path, ec);
    if (ec) return Damaged(path, "missing or unreadable: " + ec.message());
    if (size != f.bytes) {
      return Damaged(path, "is " + std::to_string(size) + " bytes, the manifest says " +
                               std::to_string(f.bytes) + " (truncated or extended)");
    }
    auto hash = HashRange(path, 0, f.bytes, /*sync=*/false);
    if (!hash.ok()) return hash.status();
    if (Hex(*hash) != f.xxh3)
      return Damaged(path, "checksum mismatch (the file was changed or damaged)");
  }
  return any;
}

// DIR/NAME whole, its size and checksum verified.
Result<std::string> ReadVerified(const Manifest& m, const std::string& dir,
                                 const std::string& name) {
  auto data = ReadWhole(dir + "/" + name);
  if (!data.ok()) return data.status();
  Status st =
      CheckFile(m, dir, name, data->size(), XXH3_64bits(data->data(), data->size()));
  if (!st.ok()) return st;
  return data;
}

}  // namespace

Result<LoadedCheckpoint> LoadCheckpoint(const std::string& dir, bool with_filter) {
  auto text = ReadWhole(dir + "/MANIFEST.json");
  if (!text.ok()) return text.status();
  auto manifest = DecodeManifest(*text, dir + "/MANIFEST.json");
  if (!manifest.ok()) return manifest.status();
  LoadedCheckpoint out;
  out.dir = dir;
  out.config_path = dir + "/config.toml";
  auto config = ReadVerified(*manifest, dir, "config.toml");
  if (!config.ok()) return config.status();
  Result<std::unique_ptr<dedup::Filter>> filter = std::unique_ptr<dedup::Filter>();
  if (with_filter) filter = LoadFilter(*manifest, dir);
  if (!filter.ok()) return filter.status();
  // frontier.bin and hosts.bin: checksum first, then their owners' decoders.
  auto frontier_bin = ReadVerified(*manifest, dir, "frontier.bin");
  if (!frontier_bin.ok()) return frontier_bin.status();
  auto image = frontier::DecodeFrontierImage(*frontier_bin, dir + "/frontier.bin");
  if (!image.ok()) return image.status();
  image->dir = dir;
  for (const frontier::FrontierImage::Spilled& s : image->spills) {
    Status checked = CheckSpill(*manifest, dir, s.range);
    if (!checked.ok()) return checked;
  }
  auto hosts_bin = ReadVerified(*manifest, dir, "hosts.bin");
  if (!hosts_bin.ok()) return hosts_bin.status();
  auto history = CheckHistory(*manifest, dir);
  if (!history.ok()) return history.status();
  if (*history) out.history_dir = dir + "/history";
  out.info = std::move(manifest->info);
  out.info.config_toml = std::move(config).value();
  out.filter = std::move(filter).value();
  out.frontier = std::move(image).value();
  out.hosts_bin = std::move(hosts_bin).value();
  if (manifest->files.count("outbox.txt") > 0) {
    auto outbox = ReadVerified(*manifest, dir, "outbox.txt");
    if (!outbox.ok()) return outbox.status();
    out.outbox = std::move(outbox).value();
  }
  return out;
}

}  // namespace crawler::checkpoint
