#include "crawler/body.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

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
}

// The RAM part moves to a new unlinked file (nothing to clean up after a
// crash: the file has no name).
bool Body::Spool() {
  fd_ = ::open(spool_dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    error_ = "spool file in " + spool_dir_ + ": " + std::strerror(errno);
    return false;
  }
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

bool Body::Finish() {
  if (fd_ < 0 || map_ != nullptr || size_ == 0) return error_.empty();
  void* m = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
  if (m == MAP_FAILED) {
    error_ = "spool file mapping: " + std::string(std::strerror(errno));
    return false;
  }
  map_ = m;
  return error_.empty();
}

}  // namespace crawler::engine
