// Work-aware placement's give (balance.h, balancer.h): the Lua
// script a busy node runs to hand shards to the least loaded node. Apart
// from cluster_wire.h, which every cluster file includes: only the giver
// and its tests use it.
#ifndef CRAWLER_CLUSTER_GIVE_SCRIPT_H_
#define CRAWLER_CLUSTER_GIVE_SCRIPT_H_

namespace crawler::engine::cluster_wire {

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
inline constexpr const char* kGiveScript = R"lua(#!lua flags=allow-oom
if redis.call('exists', KEYS[4]) == 0 then return {} end
local load = redis.call('zscore', KEYS[5], ARGV[1])
if not load or tonumber(load) > tonumber(ARGV[3]) then return {} end
if not redis.call('set', KEYS[3], '1', 'NX', 'PX', ARGV[2]) then return {} end
local given = {}
for i = 6, #KEYS do
  if redis.call('get', KEYS[i]) == ARGV[i - 2] then
    local shard = string.match(KEYS[i], '(%d+)$')
    redis.call('hset', KEYS[1], shard, ARGV[1])
    given[#given + 1] = shard
  end
end
if #given > 0 then redis.call('incr', KEYS[2]) end
return given
)lua";

}  // namespace crawler::engine::cluster_wire

#endif  // CRAWLER_CLUSTER_GIVE_SCRIPT_H_
