// The balancer's Lua scripts (balancer.h): the heartbeat's read of the
// members, and work-aware placement's give (balance.h), which a busy node
// runs to hand shards to the least loaded node. Apart from cluster_wire.h,
// which every cluster file includes: only the balancer and its tests use
// them.
#ifndef CRAWLER_CLUSTER_GIVE_SCRIPT_H_
#define CRAWLER_CLUSTER_GIVE_SCRIPT_H_

#include "cluster/handoff/give.lua.h"
#include "cluster/handoff/members.lua.h"

namespace crawler::cluster::cluster_wire {

// The job's nodes and the live ones, and the placement's overrides.
// KEYS: nodes, assign_v, assign, load. ARGV: the liveness keys' prefix
// ("crawler:{JOB}:alive:"), the assign version the caller has ('-': none),
// '1' to look for the least loaded taker, the caller, the reservations'
// prefix ("crawler:{JOB}:reserve:"). Returns {all (sorted), live (sorted),
// the assign version, the assign hash (HGETALL, shard -> node) only if its
// version is not the caller's, else nil, {node, load} of the least loaded
// live node other than the caller that no giver has reserved, or nil}.
// O(nodes), plus O(shards given) when the version moved; the least loaded
// is looked for among the 8 lowest loads (a dead node's is removed).
// kMembersScript: members.lua (embedded at build time)

// Work-aware placement (balance.h): a busy node gives shards to the least
// loaded one. KEYS: assign, assign_v, reserve:TAKER, alive:TAKER, load, then
// lease:S of each shard. ARGV: the taker, the reservation's TTL in ms, the
// most the taker may have queued (MaxTakerLoad), then the giver's "NODE
// EPOCH" of each shard. Nothing is given unless the taker is alive, its
// load is published and still at most that, and it is not reserved by
// another giver (one giver at a time: SET NX with a TTL). Each shard whose
// lease the giver still holds with that epoch is assigned to the taker
// (assign: shard -> node, an override of the placement while that node is
// live), and the version moves so every node reads it. Returns the shards
// given.
// kGiveScript: give.lua (embedded at build time)

}  // namespace crawler::cluster::cluster_wire

#endif  // CRAWLER_CLUSTER_GIVE_SCRIPT_H_
