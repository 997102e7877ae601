// See checkpointer.h.
#include "checkpoint/checkpointer.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>

#include "base/file_util.h"

namespace crawler::checkpoint {
namespace {

using frontier::Clock;

// Sanitizer builds write in-process: a child forked while other threads
// allocate can deadlock in GCC 12's ASan or TSan allocator (a CI run's
// TSan join test hung on a forked writer waiting for the allocator's lock in
// boost::json, its parent in waitpid). glibc's malloc, in other builds, is
// made safe across fork by glibc itself.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kForkWriter = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kForkWriter = false;
#else
constexpr bool kForkWriter = true;
#endif
#else
constexpr bool kForkWriter = true;
#endif

class CompactionPause {
 public:
  explicit CompactionPause(dedup::Filter& f) : f_(f) { f_.PauseCompaction(); }
  ~CompactionPause() { f_.ResumeCompaction(); }
  CompactionPause(const CompactionPause&) = delete;
  CompactionPause& operator=(const CompactionPause&) = delete;

 private:
  dedup::Filter& f_;
};

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

}  // namespace

Checkpointer::Checkpointer(std::string out, const engine::CheckpointConfig& config,
                           const Parts& parts, uint64_t sequence)
    : out_(std::move(out)), config_(config), p_(parts) {
  figures_.sequence = sequence;
  if (const char* slow = std::getenv("CRAWLER_CHECKPOINT_SLOW_MS"))
    slow_ms_ = std::atoi(slow);
}

Checkpointer::~Checkpointer() {
  if (child_ > 0) ::waitpid(child_, nullptr, 0);
  if (child_pipe_ >= 0) ::close(child_pipe_);
}

bool Checkpointer::Due(uint64_t pages_done, bool requested) const {
  if (child_ > 0) return false;
  bool by_time =
      config_.interval_s > 0 &&
      Clock::now() - last_ >= std::chrono::duration<double>(config_.interval_s);
  bool by_pages =
      config_.interval_pages > 0 && pages_done - last_pages_ >= config_.interval_pages;
  return requested || by_time || by_pages;
}

// With the gate closed: flush the outputs, record their lengths, describe.
Status Checkpointer::Prepare(CheckpointInfo* info, CheckpointSources* src, bool running) {
  p_.frontier.RemoveDrained();  // no writer is reading them now
  // The filter's hash log holds every entry the snapshot counts (the writer
  // fsyncs it before the manifest).
  info->dedup_log_bytes = p_.filter.FlushLog();
  info->fetch_log_bytes = p_.log.Bytes();
  src->fsync_fd_log = p_.log.fd();
  if (p_.seen != nullptr) {
    info->seen_log_bytes = p_.seen->Bytes();
    src->fsync_fd_seen = p_.seen->fd();
  }
  auto warc = p_.warc.Flush();
  if (!warc.ok()) return warc.status();
  info->warc_index = warc->file_index;
  info->warc_file = std::filesystem::path(warc->path).filename().string();
  info->warc_bytes = warc->bytes;
  src->fsync_fd_warc = warc->fd;
  info->sequence = figures_.sequence + 1;
  info->pause_ms = figures_.last_pause_ms;
  Status described = p_.describe(info, running);
  if (!described.ok()) return described;
  if (p_.history != nullptr) {
    // RocksDB's threads do not survive fork(): the history's image is taken
    // here, at the cut (a memtable flush and hard links); the writer moves
    // it into the checkpoint (WriteCheckpoint).
    const std::string image = out_ + "/" + kHistoryCutDir;
    std::error_code ec;
    std::filesystem::remove_all(image, ec);
    Status st = p_.history->CheckpointTo(image);
    if (!st.ok()) return st;
    src->history_image = image;
  }
  src->filter = &p_.filter;
  src->frontier = &p_.frontier;
  const engine::HostTable* hosts = &p_.hosts;
  src->write_hosts = [hosts, cut = Clock::now()](std::FILE* f, const std::string& path) {
    return hosts->Write(f, path, cut);
  };
  src->cut = Clock::now();
  src->slow_ms = slow_ms_;
  return Status::Ok();
}

void Checkpointer::Written(uint64_t bytes, double seconds, const char* how) {
  ++figures_.written;
  if (p_.on_published) p_.on_published(figures_.sequence);
  figures_.last_write_s = seconds;
  figures_.last_bytes = bytes;
  spdlog::info(
      "checkpoint {} written{}: {:.1f} MB in {:.3f} s (workers paused {:.1f} ms)",
      figures_.sequence, how, static_cast<double>(bytes) / 1e6, seconds,
      figures_.last_pause_ms);
}

Status Checkpointer::Cut(bool fork_writer, uint64_t pages_done) {
  auto t0 = Clock::now();
  if (fork_writer) p_.gate.Close();
  // The compactor keeps off the stripes until the snapshot is taken (a
  // forked child must not inherit a stripe lock it holds).
  CompactionPause hold(p_.filter);
  CheckpointInfo info;
  CheckpointSources src;
  Status st = Prepare(&info, &src, fork_writer);
  if (!st.ok()) {
    if (fork_writer) p_.gate.Open();
    ++figures_.failed;
    return st;
  }
  figures_.sequence = info.sequence;
  if (p_.on_cut) {
    std::optional<OutboxCut> outbox = p_.on_cut(info.sequence);
    src.has_outbox = outbox.has_value();
    if (outbox) {
      src.outbox = std::move(outbox->text);
      src.outbox_spill = std::move(outbox->spill_files);
    }
  }
  last_ = Clock::now();
  last_pages_ = pages_done;
  if (fork_writer && kForkWriter) return Fork(info, src, t0);

  auto written = WriteCheckpoint(out_, info, src);
  if (fork_writer) {
    p_.gate.Open();
    figures_.last_pause_ms = MsSince(t0);
    figures_.max_pause_ms = std::max(figures_.max_pause_ms, figures_.last_pause_ms);
  }
  if (!written.ok()) {
    ++figures_.failed;
    return written.status().WithContext("checkpoint " + std::to_string(info.sequence));
  }
  Written(written->bytes, written->seconds, " in-process");
  return Status::Ok();
}

Status Checkpointer::Fork(const CheckpointInfo& info, const CheckpointSources& src,
                          Clock::time_point t0) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    p_.gate.Open();
    ++figures_.failed;
    return IoError(out_, "checkpoint: pipe");
  }
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    // The child: a frozen copy of the crawl at the cut. No logging, no
    // threads; it dies with the crawler (a kill -9 of the crawler is a
    // crash during the write, which the publish protocol survives).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(3);
    ::close(fds[0]);
    auto written = WriteCheckpoint(out_, info, src);
    std::string msg = written.ok() ? "ok " + std::to_string(written->bytes) + " " +
                                         std::to_string(written->seconds)
                                   : "error " + written.status().message();
    ssize_t ignored = ::write(fds[1], msg.data(), std::min<size_t>(msg.size(), 4000));
    (void)ignored;
    ::_exit(written.ok() ? 0 : 1);
  }
  int fork_errno = errno;
  ::close(fds[1]);
  p_.gate.Open();
  figures_.last_pause_ms = MsSince(t0);
  figures_.max_pause_ms = std::max(figures_.max_pause_ms, figures_.last_pause_ms);
  if (pid < 0) {
    ::close(fds[0]);
    ++figures_.failed;
    errno = fork_errno;
    return IoError(out_, "checkpoint: fork");
  }
  child_ = pid;
  child_pipe_ = fds[0];
  return Status::Ok();
}

Status Checkpointer::Poll(bool wait) {
  if (child_ <= 0) return Status::Ok();
  int status = 0;
  pid_t r = ::waitpid(child_, &status, wait ? 0 : WNOHANG);
  if (r == 0) return Status::Ok();
  std::string msg;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(child_pipe_, buf, sizeof(buf))) > 0)
    msg.append(buf, static_cast<size_t>(n));
  ::close(child_pipe_);
  child_pipe_ = -1;
  child_ = -1;
  unsigned long long bytes = 0;
  double seconds = 0;
  if (r > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
      std::sscanf(msg.c_str(), "ok %llu %lf", &bytes, &seconds) == 2) {
    Written(bytes, seconds, "");
    return Status::Ok();
  }
  ++figures_.failed;
  std::string why = msg.rfind("error ", 0) == 0 ? msg.substr(6) : "the writer died";
  return Status::Error(Status::Code::kIoError,
                       "checkpoint " + std::to_string(figures_.sequence) + ": " + why);
}

}  // namespace crawler::checkpoint
