// Grace periods for the lock-free lookups (striped_filter.h): a compaction
// swaps a stripe's chain for one layer and may free the old layers only once
// no lookup can still be reading them.
//
// The scheme is SRCU's (Linux, sleepable RCU): two counters per slot, one per
// epoch parity. A reader adds 1 to its slot's counter of the current parity,
// reads, and takes 1 off the same counter. After publishing the new chain,
// the writer flips the epoch and waits for the old parity's counters to
// drain, twice. Why twice: a reader that read the epoch before a flip but
// counted itself after the writer's check sees the new chain (its count, and
// so its load of the chain, comes after the writer's check in the total
// order of seq_cst operations); but it sits in a counter the writer just
// stopped watching, and the next writer's single wait would miss it. The
// second flip and wait catch it.
//
// Cost to a reader: two uncontended atomic adds on its own cache line (a
// thread's slot is fixed; 64 slots, so up to 64 threads never share one).
// Writers are serialised by the caller (one compaction at a time).
#ifndef DEDUP_READ_EPOCHS_H_
#define DEDUP_READ_EPOCHS_H_

#include <atomic>
#include <cstdint>
#include <thread>

namespace crawler::dedup::internal {

class ReadEpochs {
 public:
  class Guard {
   public:
    explicit Guard(const ReadEpochs& e)
        : counter_(&e.slots_[ThreadSlot()]
                        .count[e.epoch_.load(std::memory_order_seq_cst) & 1]) {
      counter_->fetch_add(1, std::memory_order_seq_cst);
    }
    ~Guard() { counter_->fetch_sub(1, std::memory_order_release); }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    std::atomic<uint64_t>* counter_;
  };

  // Returns once every reader that may have seen what was published before
  // the call has left. REQUIRES: one caller at a time.
  void WaitForReaders() const {
    for (int round = 0; round < 2; ++round) {
      const uint32_t old = epoch_.fetch_add(1, std::memory_order_seq_cst) & 1;
      for (const Slot& slot : slots_) {
        while (slot.count[old].load(std::memory_order_acquire) != 0)
          std::this_thread::yield();
      }
    }
  }

 private:
  static constexpr uint32_t kSlots = 64;
  struct alignas(64) Slot {
    mutable std::atomic<uint64_t> count[2] = {0, 0};
  };
  static uint32_t ThreadSlot() {
    static std::atomic<uint32_t> next{0};
    thread_local const uint32_t slot =
        next.fetch_add(1, std::memory_order_relaxed) % kSlots;
    return slot;
  }

  mutable std::atomic<uint32_t> epoch_{0};
  Slot slots_[kSlots];
};

}  // namespace crawler::dedup::internal

#endif  // DEDUP_READ_EPOCHS_H_
