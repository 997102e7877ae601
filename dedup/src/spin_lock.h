// A test-and-test-and-set spin lock for the stripes' short critical sections.
// An uncontended std::mutex lock/unlock pair costs about as much as a whole
// Bloom insert; this costs one atomic exchange. Under contention it yields,
// so a preempted holder on a 2-core machine does not burn the other core.
#ifndef DEDUP_SPIN_LOCK_H_
#define DEDUP_SPIN_LOCK_H_

#include <atomic>
#include <thread>

#include "base/mutex.h"

namespace crawler::dedup {

class CAPABILITY("spin lock") SpinLock {
 public:
  void lock() ACQUIRE() {
    for (int spins = 0;; ++spins) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins > 64)
          std::this_thread::yield();  // 64: ~ a few hundred ns of spinning
      }
    }
  }
  bool try_lock() TRY_ACQUIRE(true) {
    return !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() RELEASE() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

// std::lock_guard for a SpinLock that clang's -Wthread-safety understands.
class SCOPED_CAPABILITY SpinLockGuard {
 public:
  explicit SpinLockGuard(SpinLock& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~SpinLockGuard() RELEASE() { mu_.unlock(); }
  SpinLockGuard(const SpinLockGuard&) = delete;
  SpinLockGuard& operator=(const SpinLockGuard&) = delete;

 private:
  SpinLock& mu_;
};

}  // namespace crawler::dedup

#endif  // DEDUP_SPIN_LOCK_H_
