// RamQueue: one host's URLs in RAM, handed out by rank (depth; revisits
// last), first in first out within a rank, and a deferred URL back at the
// front. A binary heap on (rank, sequence) in one vector.
//
// It replaced a std::map of std::deque per rank: a deque allocates its
// first 512-byte block whatever it holds, so at 10^5 hosts with a URL or
// two each in RAM the queue took 599 bytes per URL (`crawler stats`,
// "memory"; docs/benchmarks.md, "Memory by part").
#ifndef FRONTIER_RAM_QUEUE_H_
#define FRONTIER_RAM_QUEUE_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/heap_bytes.h"
#include "frontier/frontier.h"

namespace crawler::frontier {

class RamQueue {
 public:
  // A URL's rank: its depth; revisits (UrlEntry::revisit) after every depth.
  static uint32_t Rank(const UrlEntry& e) { return e.revisit ? UINT32_MAX - 1 : e.depth; }

  RamQueue() = default;
  // Sequences from `start` (the tests: near an end, to see them renumbered).
  explicit RamQueue(uint32_t start) : next_back_(start), next_front_(start - 1) {}

  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  // The smallest rank queued (not empty).
  uint32_t MinRank() const { return heap_.front().rank; }

  void PushBack(UrlEntry e) {
    if (next_back_ == UINT32_MAX) Renumber();
    Push(std::move(e), next_back_++);
  }
  // Before every URL of its rank (a deferred one).
  void PushFront(UrlEntry e) {
    if (next_front_ == 0) Renumber();
    Push(std::move(e), next_front_--);
  }

  UrlEntry Pop() {
    std::pop_heap(heap_.begin(), heap_.end(), After);
    UrlEntry e = std::move(heap_.back().entry);
    heap_.pop_back();
    if (heap_.empty()) {
      Clear();
    } else if (heap_.capacity() > kShrinkFrom && heap_.size() * 4 < heap_.capacity()) {
      heap_.shrink_to_fit();
    }
    return e;
  }

  void Clear() {
    std::vector<Item>().swap(heap_);  // gives its buffer back
    next_back_ = kStart;
    next_front_ = kStart - 1;
  }

  // Calls f(entry) for each URL, in no order.
  template <class F>
  void ForEach(F f) const {
    for (const Item& i : heap_) f(i.entry);
  }

  // Calls f(entry) for each URL in the order Pop would hand them out.
  template <class F>
  void ForEachInOrder(F f) const {
    std::vector<const Item*> order;
    order.reserve(heap_.size());
    for (const Item& i : heap_) order.push_back(&i);
    std::sort(order.begin(), order.end(),
              [](const Item* a, const Item* b) { return After(*b, *a); });
    for (const Item* i : order) f(i->entry);
  }

  // Its buffer and its URLs' strings (base/heap_bytes.h).
  uint64_t HeapBytes() const {
    uint64_t n = heap_bytes::Buffer(heap_);
    for (const Item& i : heap_)
      n += heap_bytes::Of(i.entry.url) + heap_bytes::Of(i.entry.referrer);
    return n;
  }

 private:
  struct Item {
    uint32_t seq;
    uint32_t rank;
    UrlEntry entry;
  };
  // Sequences count up from the middle for the back and down for the
  // front (32 bits: a host's record stays small); when one end runs out
  // (2^31 pushes while the queue never emptied) the URLs are numbered again
  // from the middle, in their order.
  static constexpr uint32_t kStart = uint32_t{1} << 31;
  static constexpr size_t kShrinkFrom = 64;
  // std::*_heap keep the largest first: "largest" is the one served first.
  static bool After(const Item& a, const Item& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.seq > b.seq;
  }
  void Renumber() {
    std::sort(heap_.begin(), heap_.end(),
              [](const Item& a, const Item& b) { return After(b, a); });
    const uint32_t first = kStart - static_cast<uint32_t>(heap_.size()) / 2;
    for (size_t i = 0; i < heap_.size(); ++i)
      heap_[i].seq = first + static_cast<uint32_t>(i);
    next_front_ = first - 1;
    next_back_ = first + static_cast<uint32_t>(heap_.size());
    std::make_heap(heap_.begin(), heap_.end(), After);
  }
  void Push(UrlEntry e, uint32_t seq) {
    const uint32_t rank = Rank(e);
    heap_.push_back(Item{seq, rank, std::move(e)});
    std::push_heap(heap_.begin(), heap_.end(), After);
  }

  std::vector<Item> heap_;
  uint32_t next_back_ = kStart;
  uint32_t next_front_ = kStart - 1;
};

}  // namespace crawler::frontier

#endif  // FRONTIER_RAM_QUEUE_H_
