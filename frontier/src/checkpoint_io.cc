// The frontier's side of a checkpoint (frontier/frontier.h): listing its
// state at a cut (ForEachEntry) and rebuilding from it (RestoreHost,
// Requeue, AdoptSpill).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "frontier_impl.h"

namespace crawler::frontier {
namespace {

// Copies [offset, offset + bytes) of `from` to the new file `to`, in the
// kernel where it can (copy_file_range: no user-space buffer; on the same
// file system it may share the blocks). Across file systems older kernels
// refuse it (EXDEV), and some file systems do not support it: then
// read/write.
Status CopyRange(const std::string& from, uint64_t offset, uint64_t bytes,
                 const std::string& to) {
  int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return IoError(from, "open");
  int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (out < 0) {
    Status st = IoError(to, "create");
    ::close(in);
    return st;
  }
  auto fail = [&](const std::string& path, const char* what) {
    Status st = IoError(path, what);
    ::close(in);
    ::close(out);
    return st;
  };
  loff_t at = static_cast<loff_t>(offset);
  uint64_t left = bytes;
  bool kernel = true;
  while (left > 0 && kernel) {
    ssize_t n = ::copy_file_range(in, &at, out, nullptr, left, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 &&
        (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
      kernel = false;
      break;
    }
    if (n < 0) return fail(to, "copy_file_range");
    if (n == 0) break;  // the source ends early
    left -= static_cast<uint64_t>(n);
  }
  std::unique_ptr<char[]> buf;
  const size_t kBuf = 1 << 20;
  while (left > 0 && !kernel) {
    if (!buf) buf = std::make_unique<char[]>(kBuf);
    ssize_t n = ::pread(in, buf.get(), std::min<uint64_t>(left, kBuf), at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(from, "read");
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = ::write(out, buf.get() + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return fail(to, "write");
      done += w;
    }
    at += n;
    left -= static_cast<uint64_t>(n);
  }
  ::close(in);
  if (::close(out) != 0) return IoError(to, "close");
  if (left > 0) {
    return Status::Error(Status::Code::kCorruption, from + ": ends before byte " +
                                                        std::to_string(offset + bytes) +
                                                        " (its checkpoint range)");
  }
  return Status::Ok();
}

}  // namespace

Status Frontier::ForEachEntry(
    Clock::time_point now, const std::function<Status(const HostImage&)>& host,
    const std::function<Status(const UrlEntry&, bool leased)>& url,
    const std::function<Result<bool>(const SpillRange&)>& spill) const {
  const Impl& m = *impl_;
  MutexLock lock(m.mu);
  for (const Impl::Host& h : m.hosts) {
    HostImage image{h.key, h.open, h.crawl_delay_s,
                    std::chrono::duration<double>(h.due - now).count()};
    Status st = host(image);
    if (!st.ok()) return st;
  }
  for (const auto& [lease_id, leased] : m.leased) {
    Status st = url(leased.second, true);
    if (!st.ok()) return st;
  }
  for (const Impl::Host& h : m.hosts) {
    Status written;
    h.ram.ForEachInOrder([&](const UrlEntry& e) {
      if (written.ok()) written = url(e, false);
    });
    if (!written.ok()) return written;
    bool taken = false;
    if (h.on_disk > 0 && spill) {
      SpillRange range{
          h.key, h.spill_path, h.read_offset, h.file_bytes, h.on_disk, h.disk_min_depth,
          {}};
      range.depths.assign(h.file_depths.begin(), h.file_depths.end());
      auto took = spill(range);
      if (!took.ok()) return took.status();
      taken = *took;
    }
    if (h.on_disk > 0 && !taken) {
      Status st = ForEachSpillRecord(h.spill_path, h.read_offset, h.on_disk,
                                     [&](const UrlEntry& e) { return url(e, false); });
      if (!st.ok()) return st;
    }
    for (const UrlEntry& e : h.write_buf) {
      Status st = url(e, false);
      if (!st.ok()) return st;
    }
  }
  return Status::Ok();
}

void Frontier::RestoreHost(const HostImage& image, Clock::time_point now) {
  MutexLock lock(impl_->mu);
  size_t id = impl_->HostFor(image.key, nullptr);
  impl_->Unschedule(id);
  Impl::Host& h = impl_->hosts[id];
  h.open = image.open;
  h.crawl_delay_s = image.crawl_delay_s;
  h.due = now + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(std::max(0.0, image.due_in_s)));
  impl_->MaybeSchedule(id);
}

Status Frontier::Requeue(UrlEntry entry) {
  MutexLock lock(impl_->mu);
  return impl_->Push(std::move(entry), nullptr);
}

Status Frontier::AdoptSpill(const SpillRange& range) {
  Impl& m = *impl_;
  MutexLock lock(m.mu);
  const size_t id = m.HostFor(range.host, nullptr);
  Impl::Host& h = m.hosts[id];
  if (range.count == 0) return Status::Ok();
  if (h.Spilling()) {
    // Behind what the host already spilled: record by record (m.mu is held;
    // the analysis cannot follow the call into the lambda).
    return ForEachSpillRecord(range.path, range.offset, range.count,
                              [&](UrlEntry e) NO_THREAD_SAFETY_ANALYSIS {
                                return m.Push(std::move(e), nullptr);
                              });
  }
  Status st = m.StartFile(h);
  if (st.ok())
    st = CopyRange(range.path, range.offset, range.end - range.offset, h.spill_path);
  if (!st.ok()) {
    std::remove(h.spill_path.c_str());
    h.spill_path.clear();
    return st;
  }
  h.read_offset = 0;
  h.file_bytes = range.end - range.offset;
  h.on_disk = range.count;
  m.on_disk += range.count;
  for (const auto& [depth, n] : range.depths) {
    h.file_depths[depth] += n;
    m.CountDepth(depth, static_cast<int64_t>(n));
  }
  h.disk_min_depth = std::min(h.disk_min_depth, range.min_depth);
  m.MaybeSchedule(id);
  return Status::Ok();
}

}  // namespace crawler::frontier
