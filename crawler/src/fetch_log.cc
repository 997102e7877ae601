// See fetch_log.h.
#include "fetch_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>

#include "base/file_util.h"

namespace crawler::engine {

namespace json = boost::json;

Result<std::unique_ptr<FetchLog>> FetchLog::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(path, "open");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    Status s = IoError(path, "stat");
    ::close(fd);
    return s;
  }
  return std::unique_ptr<FetchLog>(
      new FetchLog(path, fd, static_cast<uint64_t>(st.st_size)));
}

FetchLog::~FetchLog() { ::close(fd_); }

std::string FetchLog::Line(const FetchLogEntry& e) {
  json::object o;
  o["url"] = e.url;
  o["status"] = e.status;
  if (const FetchResult* r = e.result) {
    o["content_type"] = r->content_type;
    o["bytes"] = r->body.size();
    o["fetch_ms"] = static_cast<int64_t>(r->seconds * 1000);
    if (r->truncated) o["truncated"] = true;
    if (!r->location.empty()) o["location"] = r->location;
  }
  o["depth"] = e.depth;
  o["referrer"] = e.referrer;
  if (!e.error.empty()) o["error"] = e.error;
  if (e.robots_txt) o["robots_txt"] = true;
  return json::serialize(o);
}

Status FetchLog::Append(const FetchLogEntry& e) {
  std::string line = Line(e);
  line += '\n';
  MutexLock lock(mu_);
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError(path_, "write");
    }
    done += static_cast<size_t>(n);
  }
  bytes_ += line.size();
  return Status::Ok();
}

uint64_t FetchLog::Bytes() const {
  MutexLock lock(mu_);
  return bytes_;
}

Status FetchLog::Sync() const {
  if (::fsync(fd_) != 0) return IoError(path_, "fsync");
  return Status::Ok();
}

}  // namespace crawler::engine
