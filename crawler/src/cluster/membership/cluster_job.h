// The job's identity and the Redis it lives in, checked at join: a node
// that was part of a job records it (OUT/cluster-job.json: job, seed,
// incarnation) and never creates it again, so a Redis that lost its data, or
// another server, is an error that names what was found, not a new job with
// a new seed (new host owners, URLs in flight lost). Redis settings that lose
// the job's data are refused (maxmemory-policy) or named (AOF, appendfsync).
#ifndef CRAWLER_CLUSTER_CLUSTER_JOB_H_
#define CRAWLER_CLUSTER_CLUSTER_JOB_H_

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "cluster/redis/redis.h"

namespace crawler::cluster {

inline constexpr const char* kClusterJobFile = "cluster-job.json";

struct JobIdentity {
  std::string job;
  std::string incarnation;  // "": this node was never part of the job
  uint64_t seed = 0;
};

// OUT/cluster-job.json, or an empty identity when there is none. A file
// that cannot be parsed is an error naming it (never taken for "none").
Result<JobIdentity> ReadJobIdentity(const std::string& out_dir);
// Written once, at the first join (durable, 0600).
Status WriteJobIdentity(const std::string& out_dir, const JobIdentity& id);

// The join's refusal when the job is gone ('missing') or another
// incarnation ('incarnation', `found`), for a node that was part of `mine`.
Status JobLost(const std::string& verdict, const std::string& found,
               const JobIdentity& mine, const RedisAddress& address);

// maxmemory-policy other than noeviction: refused (Redis would evict the
// job's streams and leases). No AOF, or appendfsync other than always:
// logged, naming what a crash of Redis's machine loses. CONFIG refused (a
// managed Redis): logged, not checked.
Status CheckRedisSettings(Redis& redis, const RedisAddress& address);

// The sequence of `node`'s last checkpoint the job committed (nullopt: none),
// for a resume with cluster.shared_dir (crawl/resume.cc). Waits up to a
// minute for a Redis that is restarting (unreachable, or LOADING its AOF).
// Errors (kInvalidArgument) name cluster.redis and what Redis answered; a
// set `stop` (a signal) ends the waits (StoppedWhile).
Result<std::optional<uint64_t>> ReadLastCommit(const RedisAddress& address,
                                               const std::string& job,
                                               const std::string& node,
                                               const std::atomic<bool>* stop = nullptr);

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_CLUSTER_JOB_H_
