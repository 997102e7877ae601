// The Lua the cluster's scripts share, as C string fragments a script
// starts with (CRAWLER_LUA_STATE, CRAWLER_LUA_LAG), and the rule every
// script keeps:
//
// Scripts that keep the job going carry "#!lua flags=allow-oom": they run
// when Redis is full (maxmemory with noeviction), so heartbeats, leases,
// reads, commits, acknowledgements and trims go on and free memory. Only
// sends (kSendScript, XADD) are refused then: their batches wait in the
// outbox (RAM, then spill files). Read-only scripts have no shebang (a
// flagged script without allow-oom is refused when full, even one that only
// reads).
#ifndef CRAWLER_CLUSTER_LUA_FUNCTIONS_H_
#define CRAWLER_CLUSTER_LUA_FUNCTIONS_H_

// A node's state for the end test: the hash state (NODE -> idle|busy) and
// the set busy, its busy nodes, always written together (CRAWLER_LUA_STATE,
// in every script that writes the state): the end test's first look is at
// one member of busy, O(1) whatever the node count (kDoneHintScript).
#define CRAWLER_LUA_STATE                            \
  "local function set_state(state, busy, node, v)\n" \
  "  redis.call('hset', state, node, v)\n"           \
  "  if v == 'busy' then\n"                          \
  "    redis.call('sadd', busy, node)\n"             \
  "  else\n"                                         \
  "    redis.call('srem', busy, node)\n"             \
  "  end\n"                                          \
  "end\n"

// A stream's lag: its entries not yet delivered to the group "owners" (all
// of them before the owner made the group). Acknowledged entries are trimmed
// at once, so XLEN - pending is what the owner has not read. An empty or
// missing stream (never made: Redis full) is not asked: XPENDING's NOGROUP,
// even caught, counts as an error reply, and the sender asks every 100 ms.
#define CRAWLER_LUA_LAG                                  \
  "local function lag(key)\n"                            \
  "  local len = redis.call('xlen', key)\n"              \
  "  if len == 0 then return 0 end\n"                    \
  "  local p = redis.pcall('xpending', key, 'owners')\n" \
  "  if type(p) == 'table' and p.err == nil then\n"      \
  "    return len - p[1]\n"                              \
  "  end\n"                                              \
  "  return len\n"                                       \
  "end\n"

#endif  // CRAWLER_CLUSTER_LUA_FUNCTIONS_H_
