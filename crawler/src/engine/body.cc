#include "crawler/body.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/heap_bytes.h"

namespace crawler::engine {

namespace {
std::atomic<uint64_t> g_ram_bytes{0};
}  // namespace

uint64_t Body::RamBytes() { return g_ram_bytes.load(std::memory_order_relaxed); }

void Body::Recount() {
  const size_t now = heap_bytes::Of(ram_);
  if (now > counted_) g_ram_bytes.fetch_add(now - counted_, std::memory_order_relaxed);
  if (now < counted_) g_ram_bytes.fetch_sub(counted_ - now, std::memory_order_relaxed);
  counted_ = now;
}

Body::~Body() {
  Release();
  g_ram_bytes.fetch_sub(counted_, std::memory_order_relaxed);
}

Body& Body::operator=(Body&& other) noexcept {
  if (this == &other) return *this;
  Release();
  g_ram_bytes.fetch_sub(counted_, std::memory_order_relaxed);
  ram_ = std::move(other.ram_);
  counted_ = other.counted_;
  other.counted_ = 0;
  spool_bytes_ = other.spool_bytes_;
  spool_dir_ = std::move(other.spool_dir_);
  error_ = std::move(other.error_);
  spooled_ = other.spooled_;
  other.spooled_ = false;
  fd_ = other.fd_;
  size_ = other.size_;
  map_ = other.map_;
  other.fd_ = -1;
  other.size_ = 0;
  other.map_ = nullptr;
  other.ram_.clear();
  return *this;
}

void Body::Release() {
  if (map_ != nullptr) ::munmap(map_, size_);
  if (fd_ >= 0) ::close(fd_);
  map_ = nullptr;
  fd_ = -1;
  size_ = 0;
  spooled_ = false;
}

// A new unlinked file in `dir`: O_TMPFILE (it never has a name, nothing to
// clean up after a crash), or where the file system has none (NFS, older
// kernels: EOPNOTSUPP, EISDIR, EINVAL) mkostemp and unlink at once (a
// crash between the two leaves one spool-* file, removed at the next
// start: crawl.cc). -1 with errno set on failure.
int Body::OpenSpool(const std::string& dir, bool tmpfile) {
  if (tmpfile) {
    const int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) return fd;
  }
  std::string path = dir + "/spool-XXXXXX";
  const int fd = ::mkostemp(path.data(), O_CLOEXEC);
  if (fd >= 0) ::unlink(path.c_str());
  return fd;
}

void Body::ClearSpool(const std::string& dir) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->path().filename().string().starts_with("spool-"))
      std::filesystem::remove(it->path(), ec);
  }
}

// The RAM part moves to a new unlinked file.
bool Body::Spool() {
  fd_ = OpenSpool(spool_dir_);
  if (fd_ < 0) {
    error_ = "spool file in " + spool_dir_ + ": " + std::strerror(errno);
    return false;
  }
  spooled_ = true;
  std::string held = std::move(ram_);
  ram_ = std::string();
  Recount();
  return Append(held.data(), held.size());
}

bool Body::Append(const char* data, size_t n) {
  if (!error_.empty()) return false;
  if (fd_ < 0) {
    if (spool_dir_.empty() || ram_.size() + n <= spool_bytes_) {
      ram_.append(data, n);
      Recount();
      return true;
    }
    if (!Spool()) return false;
  }
  for (size_t done = 0; done < n;) {
    ssize_t w = ::write(fd_, data + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      error_ =
          "spool file in " + spool_dir_ + ": " + std::strerror(w < 0 ? errno : ENOSPC);
      return false;
    }
    done += static_cast<size_t>(w);
    size_ += static_cast<size_t>(w);
  }
  return true;
}

// The mapping keeps the file: its descriptor is closed here, so a body
// waiting to be parsed holds no descriptor (a crawl with thousands of
// large bodies in flight ran into RLIMIT_NOFILE).
bool Body::Finish() {
  if (fd_ < 0) return error_.empty();
  if (size_ > 0 && error_.empty()) {
    void* m = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
    if (m == MAP_FAILED) {
      error_ = "spool file mapping: " + std::string(std::strerror(errno));
    } else {
      map_ = m;
    }
  }
  ::close(fd_);
  fd_ = -1;
  return error_.empty();
}

}  // namespace crawler::engine
