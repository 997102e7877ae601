// An append-only file shared by the engine's logs (fetch_log.h, seen_log.h):
// each Append is one write(2) loop under a mutex (no user-space buffer:
// after a crash the file shows every append that returned), and the length
// is kept so a checkpoint can record it. A failed write is an error naming
// the file (a full disk must not lose records silently).
//
// Thread-safe: one mutex around each append.
#ifndef CRAWLER_APPEND_LOG_H_
#define CRAWLER_APPEND_LOG_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/mutex.h"
#include "base/status.h"

namespace crawler::output {

class AppendLog {
 public:
  // Opens (creates) PATH for appending; Bytes() starts at its length.
  static Result<std::unique_ptr<AppendLog>> Open(const std::string& path);
  ~AppendLog();
  AppendLog(const AppendLog&) = delete;
  AppendLog& operator=(const AppendLog&) = delete;

  [[nodiscard]] Status Append(std::string_view data) EXCLUDES(mu_);
  // Every byte counted is in the file.
  uint64_t Bytes() const EXCLUDES(mu_);
  [[nodiscard]] Status Sync() const;
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  AppendLog(std::string path, int fd, uint64_t bytes)
      : path_(std::move(path)), fd_(fd), bytes_(bytes) {}
  const std::string path_;
  const int fd_;
  mutable Mutex mu_;
  uint64_t bytes_ GUARDED_BY(mu_);
};

}  // namespace crawler::output

#endif  // CRAWLER_APPEND_LOG_H_
