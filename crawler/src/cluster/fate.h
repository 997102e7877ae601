// Why a cluster node stops (cluster.h, Death and leave): the first failure
// recorded wins and is logged; a fencing (another node took shards this
// one held, so its work since its last committed checkpoint is void) is
// marked as such, whichever failure came first. Thread-safe: the exchange
// thread fails, the crawl's Run thread reads.
#ifndef CRAWLER_CLUSTER_FATE_H_
#define CRAWLER_CLUSTER_FATE_H_

#include <spdlog/spdlog.h>

#include <atomic>
#include <string>

#include "base/mutex.h"
#include "base/status.h"

namespace crawler::cluster {

class Fate {
 public:
  // `why`'s code is the exit's: kIoError exits 1, the others 2.
  void Fail(const Status& why, bool fenced = false) EXCLUDES(mu_) {
    if (fenced) fenced_ = true;
    spdlog::error("{}", why.message());
    MutexLock lock(mu_);
    if (failed_.exchange(true)) return;
    status_ = why;
  }
  // A failure of the exchange (kIoError: exit 1), "cluster: " + `why`.
  void Fail(const std::string& why, bool fenced = false) {
    Fail(Status::Error(Status::Code::kIoError, "cluster: " + why), fenced);
  }
  bool failed() const { return failed_.load(); }
  bool fenced() const { return fenced_.load(); }
  Status status() const EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return status_;
  }

 private:
  std::atomic<bool> failed_{false}, fenced_{false};
  mutable Mutex mu_;
  Status status_ GUARDED_BY(mu_);
};

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_FATE_H_
