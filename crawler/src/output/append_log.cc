// See append_log.h.
#include "output/append_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/file_util.h"

namespace crawler::output {

Result<std::unique_ptr<AppendLog>> AppendLog::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(path, "open");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    Status s = IoError(path, "stat");
    ::close(fd);
    return s;
  }
  return std::unique_ptr<AppendLog>(
      new AppendLog(path, fd, static_cast<uint64_t>(st.st_size)));
}

AppendLog::~AppendLog() { ::close(fd_); }

Status AppendLog::Append(std::string_view data) {
  MutexLock lock(mu_);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd_, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError(path_, "write");
    }
    done += static_cast<size_t>(n);
  }
  bytes_ += data.size();
  return Status::Ok();
}

uint64_t AppendLog::Bytes() const {
  MutexLock lock(mu_);
  return bytes_;
}

Status AppendLog::Sync() const {
  if (::fsync(fd_) != 0) return IoError(path_, "fsync");
  return Status::Ok();
}

}  // namespace crawler::output
