// The balancer's Lua scripts (balancer.h): the heartbeat's read of the
// members, and work-aware placement's give (balance.h), which a busy node
// runs to hand shards to the least loaded node. Apart from cluster_wire.h,
// which every cluster file includes: only the balancer and its tests use
// them.
#ifndef CRAWLER_CLUSTER_GIVE_SCRIPT_H_
#define CRAWLER_CLUSTER_GIVE_SCRIPT_H_

namespace crawler::engine::cluster_wire {

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
inline constexpr const char* kMembersScript = R"lua(
local all = redis.call('smembers', KEYS[1])
table.sort(all)
local live = {}
for _, n in ipairs(all) do
  if redis.call('exists', ARGV[1] .. n) == 1 then live[#live + 1] = n end
end
local v = redis.call('get', KEYS[2]) or '0'
local assign = false
if v ~= ARGV[2] then assign = redis.call('hgetall', KEYS[3]) end
local least = false
if ARGV[3] == '1' then
  local low = redis.call('zrange', KEYS[4], 0, 7, 'WITHSCORES')
  for i = 1, #low, 2 do
    local n = low[i]
    if redis.call('exists', ARGV[1] .. n) == 0 then
      redis.call('zrem', KEYS[4], n)
    elseif n ~= ARGV[4] and redis.call('exists', ARGV[5] .. n) == 0 then
      least = {n, low[i + 1]}
      break
    end
  end
end
return {all, live, v, assign, least}
)lua";

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
