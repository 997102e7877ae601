// A mutex clang's -Wthread-safety can check (libstdc++'s std::mutex carries
// no capability attributes), its scoped lock, and the annotation macros.
// Write `T x_ GUARDED_BY(mu_);` and `void F() REQUIRES(mu_);`; a clang build
// with -Wthread-safety (CI step "thread-safety") then rejects an unguarded
// access. Under GCC the macros expand to nothing.
//
// Mutex is a std::mutex (same cost); MutexLock is std::lock_guard. Use
// std::condition_variable_any with a MutexLock's mutex for waits.
#ifndef BASE_MUTEX_H_
#define BASE_MUTEX_H_

#include <mutex>

#if defined(__clang__)
#define CRAWLER_TSA(x) __attribute__((x))
#else
#define CRAWLER_TSA(x)
#endif

#define CAPABILITY(x) CRAWLER_TSA(capability(x))
#define SCOPED_CAPABILITY CRAWLER_TSA(scoped_lockable)
#define GUARDED_BY(x) CRAWLER_TSA(guarded_by(x))
#define PT_GUARDED_BY(x) CRAWLER_TSA(pt_guarded_by(x))
#define REQUIRES(...) CRAWLER_TSA(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) CRAWLER_TSA(locks_excluded(__VA_ARGS__))
#define ACQUIRED_BEFORE(...) CRAWLER_TSA(acquired_before(__VA_ARGS__))
#define ACQUIRE(...) CRAWLER_TSA(acquire_capability(__VA_ARGS__))
#define RELEASE(...) CRAWLER_TSA(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) CRAWLER_TSA(try_acquire_capability(__VA_ARGS__))
#define NO_THREAD_SAFETY_ANALYSIS CRAWLER_TSA(no_thread_safety_analysis)

namespace crawler {

class CAPABILITY("mutex") Mutex {
 public:
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() RELEASE() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

}  // namespace crawler

#endif  // BASE_MUTEX_H_
