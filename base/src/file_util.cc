// See base/file_util.h.
#include "base/file_util.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace crawler {

Status IoError(const std::string& path, const std::string& what) {
  return Status::Error(Status::Code::kIoError,
                       path + ": " + what + ": " + std::strerror(errno));
}

Status SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IoError(dir, "open");
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  errno = err;
  if (rc != 0) return IoError(dir, "fsync");
  return Status::Ok();
}

Status ExchangePaths(const std::string& a, const std::string& b) {
  if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0)
    return Status::Ok();
  if (errno == EINVAL || errno == ENOSYS) {
    return Status::Error(Status::Code::kNotSupported,
                         a + ": cannot exchange with " + b + ": " + std::strerror(errno));
  }
  return IoError(a, "exchange with " + b);
}

Status WriteFileAtomic(const std::string& path,
                       const std::function<Status(std::FILE*)>& write, bool durable,
                       unsigned mode) {
  const std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());  // a leftover keeps its mode through O_TRUNC
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                  static_cast<mode_t>(mode));
  if (fd < 0) return IoError(tmp, "create");
  std::FILE* out = ::fdopen(fd, "wb");
  if (out == nullptr) {
    Status st = IoError(tmp, "fdopen");
    ::close(fd);
    return st;
  }
  Status st = write(out);
  if (st.ok() && std::fflush(out) != 0) st = IoError(tmp, "write");
  if (st.ok() && durable && ::fsync(fileno(out)) != 0) st = IoError(tmp, "fsync");
  if (std::fclose(out) != 0 && st.ok()) st = IoError(tmp, "close");
  if (st.ok() && std::rename(tmp.c_str(), path.c_str()) != 0)
    st = IoError(path, "rename");
  if (!st.ok()) {
    std::remove(tmp.c_str());
    return st;
  }
  if (!durable) return Status::Ok();
  std::string dir = std::filesystem::path(path).parent_path().string();
  return SyncDir(dir.empty() ? "." : dir);
}

Status WriteFileAtomic(const std::string& path, std::string_view contents, bool durable,
                       unsigned mode) {
  return WriteFileAtomic(
      path,
      [&](std::FILE* f) {
        if (std::fwrite(contents.data(), 1, contents.size(), f) != contents.size()) {
          return IoError(path + ".tmp", "write");
        }
        return Status::Ok();
      },
      durable, mode);
}

uint64_t RaiseOpenFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur;
}

}  // namespace crawler
