// The workers' shared run state and result queue (worker.h): the parts of
// a crawl's work that every worker thread touches under a lock.
#include <spdlog/spdlog.h>

#include "engine/worker.h"

namespace crawler::engine {

using frontier::Clock;

void RunState::Fail(const Status& st) {
  MutexLock lock(mu_);
  if (!failed_.exchange(true)) {
    first_error_ = st;
    spdlog::error("crawl stopped: {}", st.message());
  }
}

void ResultQueue::Push(std::vector<Completed>* batch) {
  {
    MutexLock lock(mu_);
    for (Completed& c : *batch) queue_.push_back(std::move(c));
  }
  batch->clear();
  cv_.notify_all();
}

std::optional<Completed> ResultQueue::TryPop() {
  MutexLock lock(mu_);
  if (queue_.empty()) return std::nullopt;
  std::optional<Completed> c(std::move(queue_.front()));
  queue_.pop_front();
  return c;
}

bool ResultQueue::Empty() const {
  MutexLock lock(mu_);
  return queue_.empty();
}

size_t ResultQueue::Size() const {
  MutexLock lock(mu_);
  return queue_.size();
}

void ResultQueue::WaitUntil(Clock::time_point deadline) {
  MutexLock lock(mu_);
  cv_.wait_until(mu_, deadline, [&]() REQUIRES(mu_) { return !queue_.empty(); });
}

}  // namespace crawler::engine
