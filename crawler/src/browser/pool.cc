#include "browser/pool.h"

#include <signal.h>

#include <utility>

namespace crawler::browser {

void Pool::Submit(RenderJob job) {
  {
    MutexLock lock(mu_);
    if (stopping_) {
      // Answered outside the lock, below.
    } else {
      queue_.push_back(std::move(job));
      if (threads_.empty()) {
        const int n = options_.processes > 0 ? options_.processes : 1;
        pids_.assign(static_cast<size_t>(n), 0);
        for (int slot = 0; slot < n; ++slot)
          threads_.emplace_back([this, slot] { Run(slot); });
      }
      cv_.notify_one();
      return;
    }
  }
  job.done(Status::Error(Status::Code::kIoError, "browser: the pool has stopped"),
           Outcome::kStopped);
}

void Pool::Stop(bool kill) {
  std::deque<RenderJob> left;
  std::vector<std::thread> threads;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    left.swap(queue_);
    threads.swap(threads_);
    if (kill) {
      for (pid_t pid : pids_)
        if (pid > 0) ::kill(-pid, SIGKILL);  // its thread reaps it
    }
  }
  cv_.notify_all();
  for (RenderJob& job : left) {
    job.done(Status::Error(Status::Code::kIoError, "browser: the pool has stopped"),
             Outcome::kStopped);
  }
  for (std::thread& t : threads) t.join();
}

bool Pool::Next(RenderJob* job) {
  MutexLock lock(mu_);
  cv_.wait(mu_, [&]() REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
  if (stopping_) return false;  // Stop answers what is queued
  *job = std::move(queue_.front());
  queue_.pop_front();
  return true;
}

void Pool::Run(int slot) {
  std::unique_ptr<Renderer> browser;
  int pages = 0;
  RenderJob job;
  while (Next(&job)) RenderOne(slot, browser, pages, job);
  browser.reset();  // killed and reaped
  MutexLock lock(mu_);
  pids_[static_cast<size_t>(slot)] = 0;
}

void Pool::RenderOne(int slot, std::unique_ptr<Renderer>& browser, int& pages,
                     RenderJob& job) {
  Result<RenderResult> out =
      Status::Error(Status::Code::kIoError, "browser: not rendered");
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (attempt > 0) ++retried_;
    if (browser == nullptr || !browser->alive() || pages >= options_.restart_pages) {
      browser.reset();
      LaunchOptions launch = options_.launch;
      // (append, not "/" + to_string: GCC 12's -Wrestrict false positive
      // at -O3, its bug 105329.)
      const std::string n = std::to_string(slot);
      launch.user_data_dir.append("/").append(n);
      if (!launch.log_path.empty()) launch.log_path.append(".").append(n);
      auto started = Renderer::Start(launch);
      if (!started.ok()) {
        out = started.status();
        continue;
      }
      browser = std::move(started).value();
      ++started_;
      pages = 0;
      MutexLock lock(mu_);
      pids_[static_cast<size_t>(slot)] = browser->pid();
    }
    out = browser->Render(job.url, job.options);
    ++pages;
    if (out.ok()) break;
    {
      MutexLock lock(mu_);
      if (stopping_) break;  // killed by Stop: not tried again
    }
    const bool died = !browser->alive();
    if (died) ++deaths_;
    const bool hung = out.status().code() == Status::Code::kOutOfRange;
    if (!died && !hung) break;  // the page's own failure: not tried again
    // A hung tab may have left its renderer stuck: a fresh browser.
    browser.reset();
    MutexLock lock(mu_);
    pids_[static_cast<size_t>(slot)] = 0;
  }
  bool stopped = false;
  {
    MutexLock lock(mu_);
    stopped = stopping_;
  }
  if (out.ok()) {
    ++rendered_;
    {
      MutexLock lock(mu_);
      render_us_.Add(static_cast<int64_t>(out->seconds * 1e6));
    }
    job.done(std::move(out), Outcome::kRendered);
  } else if (stopped) {
    job.done(std::move(out), Outcome::kStopped);
  } else {
    ++given_up_;
    job.done(std::move(out), Outcome::kGivenUp);
  }
}

Pool::Figures Pool::figures() const {
  Figures f{rendered_.load(), given_up_.load(), retried_.load(), started_.load(),
            deaths_.load()};
  std::vector<pid_t> running;
  {
    MutexLock lock(mu_);
    f.render_p50_s = render_us_.QuantileMs(0.5) / 1000;
    f.render_p99_s = render_us_.QuantileMs(0.99) / 1000;
    running = pids_;
  }
  // (Outside the lock: /proc is read.) A browser stopped between the two
  // reads is counted in neither, or, killed after its pid was read, in both:
  // a figure off by one browser's CPU for one refresh.
  f.cpu_s = StoppedBrowsersCpuSeconds();
  for (pid_t pid : running)
    if (pid > 0) f.cpu_s += GroupCpuSeconds(pid);
  return f;
}

std::vector<pid_t> Pool::pids() const {
  MutexLock lock(mu_);
  return pids_;
}

}  // namespace crawler::browser
