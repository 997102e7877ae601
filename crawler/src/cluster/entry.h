// Room cluster/: what the `crawler` command (cli/main.cc) takes from this
// room, and all it takes. The crawl reaches a cluster node only through the
// NodeJoiner (crawl/node.h) the command passes it.
#ifndef CRAWLER_CLUSTER_ENTRY_H_
#define CRAWLER_CLUSTER_ENTRY_H_

#include <atomic>
#include <string>

#include "crawl/node.h"

namespace crawler::cluster {

// Joins a job as a Cluster (cluster.h); reads a node's last commit. `stop`
// (the command's signal flag, set before the node runs) ends their waits
// for Redis and for a previous process's liveness key.
crawl::NodeJoiner ClusterJoiner(const std::atomic<bool>* stop = nullptr);

// `crawler cluster-stats redis://HOST:PORT --job J [--json]`: a cluster job as
// Redis sees it: nodes (alive, pages/s, shards), stream lag per shard,
// Redis memory per in-flight URL, totals. 2: no such job or no Redis.
int RunClusterStats(const std::string& redis_url, const std::string& job, bool json,
                    const std::string& html_path = "");

}  // namespace crawler::cluster

#endif  // CRAWLER_CLUSTER_ENTRY_H_
