// The checkpoint gate: workers do their shared work in units that pass it;
// the checkpoint closes it (waiting only for the units under way) to take a
// consistent cut, then fork()s a writer and reopens it.
//
// THE RULE. The forked writer reads the dedup filter (stripe locks), the
// frontier (its mutex) and the host table (its mutex). A lock held by another
// thread at the fork stays held forever in the child, which then deadlocks.
// So a worker thread calls those three only inside a GateUnit, i.e. while it
// holds a Gate::Pass: the parts it calls through take `const Gate::Pass&`
// (HostTable's locking methods, Worker's steps), so the rule shows at every
// call site. Only the thread that forks (Crawl::Run's) may call them without
// a pass. (A frontier call outside the gate, Empty() on an idle worker, once
// deadlocked a checkpoint: tests/checkpoint/checkpoint_test.cc "[stress]".)
//
// Thread-safe.
#ifndef CRAWLER_GATE_H_
#define CRAWLER_GATE_H_

#include <condition_variable>
#include <mutex>

#include "base/mutex.h"

namespace crawler::engine {

class Gate {
 public:
  // Proof that the holder is inside a unit (only a GateUnit makes one).
  class Pass {
    friend class GateUnit;
    Pass() = default;
  };

  void Enter() EXCLUDES(mu_) {
    MutexLock lock(mu_);
    cv_.wait(mu_, [&]() REQUIRES(mu_) { return !closed_; });
    ++active_;
  }
  // Enter, unless the gate is closed (a checkpoint is being cut): false.
  bool TryEnter() EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (closed_) return false;
    ++active_;
    return true;
  }
  void Exit() EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (--active_ == 0 && closed_) cv_.notify_all();
  }
  // Returns once no unit is under way; no new one starts until Open.
  void Close() EXCLUDES(mu_) {
    MutexLock lock(mu_);
    closed_ = true;
    cv_.wait(mu_, [&]() REQUIRES(mu_) { return active_ == 0; });
  }
  void Open() EXCLUDES(mu_) {
    {
      MutexLock lock(mu_);
      closed_ = false;
    }
    cv_.notify_all();
  }

 private:
  Mutex mu_;
  std::condition_variable_any cv_;
  int active_ GUARDED_BY(mu_) = 0;
  bool closed_ GUARDED_BY(mu_) = false;
};

// One unit of work: enters the gate for its lifetime.
class GateUnit {
 public:
  explicit GateUnit(Gate& gate) : gate_(gate) { gate_.Enter(); }
  // A unit only if the gate is open now (entered() says), never waiting:
  // for a thread that must keep its period (the cluster's exchange thread,
  // whose heartbeats stalled 0.8 s behind a cut waiting on a worker's long
  // unit).
  GateUnit(Gate& gate, std::try_to_lock_t) : gate_(gate), entered_(gate_.TryEnter()) {}
  ~GateUnit() {
    if (entered_) gate_.Exit();
  }
  bool entered() const { return entered_; }
  GateUnit(const GateUnit&) = delete;
  GateUnit& operator=(const GateUnit&) = delete;
  const Gate::Pass& pass() const { return pass_; }

 private:
  Gate& gate_;
  bool entered_ = true;
  Gate::Pass pass_;
};

}  // namespace crawler::engine

#endif  // CRAWLER_GATE_H_
