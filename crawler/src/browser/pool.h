// A pool of headless Chromium processes that render pages for the crawl:
// `processes` browsers, each on a thread of its own rendering one page at a
// time, started when the first page comes (none at all if none does), each
// in a profile directory of its own (DIR/0, DIR/1, ...), restarted after
// `restart_pages` pages, and after it died or a page hung in it.
//
// What happens to a page:
//   - rendered: its job's `done` gets the result;
//   - the browser died with it, or it hung past its cap (kOutOfRange): it is
//     rendered once more in a fresh browser, then given up;
//   - another failure (net::ERR_..., named): given up at once;
//   - the pool stopped before its turn: `done` gets Outcome::kStopped, so the
//     caller puts the page back (a page is never dropped by the pool).
// `done` runs on the pool's thread, exactly once per job.
#ifndef CRAWLER_BROWSER_POOL_H_
#define CRAWLER_BROWSER_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/latencies.h"
#include "base/mutex.h"
#include "base/status.h"
#include "browser/renderer.h"

namespace crawler::browser {

struct PoolOptions {
  LaunchOptions launch;  // user_data_dir: the parent of the processes' profiles
  int processes = 1;
  int restart_pages = 100;  // a browser is restarted after this many pages
};

enum class Outcome {
  kRendered,
  kGivenUp,  // the error says why (a retry included where one was made)
  kStopped,  // not rendered: the pool stopped first
};

struct RenderJob {
  std::string url;
  RenderOptions options;
  std::function<void(Result<RenderResult>, Outcome)> done;
};

class Pool {
 public:
  explicit Pool(PoolOptions options) : options_(std::move(options)) {}
  // Stops at once: the pages in the browsers are answered kStopped too.
  ~Pool() { Stop(/*kill=*/true); }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // Queues a page; the first one starts the threads.
  void Submit(RenderJob job) EXCLUDES(mu_);
  // Answers the queued jobs kStopped, lets each thread finish the page it
  // renders (with `kill`: kills the browsers, and those pages are answered
  // kStopped as well), stops the browsers. Idempotent.
  void Stop(bool kill = false) EXCLUDES(mu_);

  struct Figures {
    uint64_t rendered = 0;
    uint64_t given_up = 0;
    uint64_t retried = 0;  // pages rendered again after a death or a hang
    uint64_t started = 0;  // browsers started (restarts included)
    uint64_t deaths = 0;   // browsers found dead after a page
    // A rendered page's time in the browser (within 19%), 0 before one.
    double render_p50_s = 0, render_p99_s = 0;
    // The browsers' CPU seconds, their helpers' included: those stopped,
    // and those running now.
    double cpu_s = 0;
  };
  Figures figures() const;
  // The browsers' process ids now (0: none running in that slot).
  std::vector<pid_t> pids() const EXCLUDES(mu_);

 private:
  void Run(int slot);
  bool Next(RenderJob* job) EXCLUDES(mu_);
  // Renders one job in slot's browser (started, or restarted, as needed).
  void RenderOne(int slot, std::unique_ptr<Renderer>& browser, int& pages,
                 RenderJob& job);

  const PoolOptions options_;
  mutable Mutex mu_;
  std::condition_variable_any cv_;
  std::deque<RenderJob> queue_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ GUARDED_BY(mu_);
  std::vector<pid_t> pids_ GUARDED_BY(mu_);
  std::atomic<uint64_t> rendered_{0}, given_up_{0}, retried_{0}, started_{0}, deaths_{0};
  Latencies render_us_ GUARDED_BY(mu_);
};

}  // namespace crawler::browser

#endif  // CRAWLER_BROWSER_POOL_H_
