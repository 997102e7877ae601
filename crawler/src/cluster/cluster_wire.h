// The cluster's wire formats, shared by cluster.cc (join, start, outbox) and
// cluster_exchange.cc (the exchange thread): the Lua scripts, the stream
// entry's payload (zlib'd lines "url \t depth \t redirects \t referrer"), the
// outbox file, stream IDs. Internal to the engine.
#ifndef CRAWLER_CLUSTER_WIRE_H_
#define CRAWLER_CLUSTER_WIRE_H_

#include <fmt/core.h>
#include <hiredis/hiredis.h>
#include <xxhash.h>
#include <zlib.h>

#include <boost/json.hpp>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "crawler/config.h"
#include "frontier/frontier.h"

namespace crawler::engine::cluster_wire {

namespace json = boost::json;
using SteadyClock = std::chrono::steady_clock;

// Scripts that keep the job going carry "#!lua flags=allow-oom": they run
// when Redis is full (maxmemory with noeviction), so heartbeats, leases,
// reads, commits, acknowledgements and trims go on and free memory. Only
// sends (kSendScript, XADD) are refused then: their batches wait in the
// outbox (RAM, then spill files). Read-only scripts have no shebang (a
// flagged script without allow-oom is refused when full, even one that only
// reads).

// Liveness, figures and load. KEYS: alive:NODE, stats, load. ARGV: token,
// ttl ms, node, figures JSON, the node's load (balance.h: URLs queued for
// the shards it holds; '-': none to publish, it is not a taker now; '':
// unchanged).
inline constexpr const char* kAliveScript = R"lua(#!lua flags=allow-oom
redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('hset', KEYS[2], ARGV[3], ARGV[4])
if ARGV[5] == '-' then
  redis.call('zrem', KEYS[3], ARGV[3])
elseif ARGV[5] ~= '' then
  redis.call('zadd', KEYS[3], ARGV[5], ARGV[3])
end
return 1
)lua";

// Redis is full: flags it for every node (they cut a checkpoint early, to
// acknowledge and trim). KEYS: full. ARGV: node, ttl ms.
inline constexpr const char* kFullScript = R"lua(#!lua flags=allow-oom
return redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
)lua";

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

// This node's state for the end test. KEYS: state, busy. ARGV: node,
// idle|busy.
inline constexpr const char* kStateScript =
    "#!lua flags=allow-oom\n" CRAWLER_LUA_STATE R"lua(
set_state(KEYS[1], KEYS[2], ARGV[1], ARGV[2])
return 1
)lua";

// Join. KEYS: meta, nodes, started, alive:NODE.
// ARGV: node, token, shards, seed, config hash, config JSON, ttl ms, open
// ('1': with cluster.shared_dir a new node may join a started job; the
// shards it is given are handed over to it), the incarnation this node was
// part of ('': none, a new node), a new incarnation id, the seed hosts per
// shard under this seed (shard_owners.h, EncodeWeights: the creator's are
// the job's, fixed, so the placement never changes under a live set).
// A node that was part of the job never creates it: the job missing
// ('missing') or created anew ('incarnation') means Redis lost its data or
// is another server.
// Returns {verdict, detail, incarnation, weights}.
inline constexpr const char* kJoinScript = R"lua(#!lua flags=allow-oom
if redis.call('exists', KEYS[1]) == 0 then
  if ARGV[9] ~= '' then return {'missing', ''} end
  redis.call('hset', KEYS[1], 'shards', ARGV[3], 'seed', ARGV[4],
             'config_hash', ARGV[5], 'config', ARGV[6], 'incarnation', ARGV[10],
             'weights', ARGV[11])
end
local meta = redis.call('hmget', KEYS[1], 'shards', 'seed', 'config_hash', 'config',
                        'incarnation', 'weights')
if ARGV[9] ~= '' and meta[5] ~= ARGV[9] then return {'incarnation', meta[5] or ''} end
if meta[1] ~= ARGV[3] then return {'shards', meta[1]} end
if meta[3] ~= ARGV[5] then return {'config', meta[4]} end
local alive = redis.call('get', KEYS[4])
if alive and alive ~= ARGV[2] then return {'duplicate', alive} end
if ARGV[8] ~= '1' and redis.call('exists', KEYS[3]) == 1 and
   redis.call('sismember', KEYS[2], ARGV[1]) == 0 then
  return {'closed', table.concat(redis.call('smembers', KEYS[2]), ',')}
end
redis.call('sadd', KEYS[2], ARGV[1])
redis.call('set', KEYS[4], ARGV[2], 'PX', ARGV[7])
return {'ok', meta[2], meta[5] or '', meta[6] or ''}
)lua";

// Start barrier. KEYS: nodes, started. ARGV: min nodes. Returns the node set
// once the job has started, else nil.
inline constexpr const char* kStartScript = R"lua(#!lua flags=allow-oom
if redis.call('exists', KEYS[2]) == 0 and redis.call('scard', KEYS[1]) >= tonumber(ARGV[1]) then
  redis.call('set', KEYS[2], '1')
end
if redis.call('exists', KEYS[2]) == 1 then return redis.call('smembers', KEYS[1]) end
return false
)lua";

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

// A stream's lag: its entries not yet delivered to the group "owners" (all
// of them before the owner made the group). Acknowledged entries are trimmed
// at once, so XLEN - pending is what the owner has not read.
#define CRAWLER_LUA_LAG                                  \
  "local function lag(key)\n"                            \
  "  local len = redis.call('xlen', key)\n"              \
  "  local p = redis.pcall('xpending', key, 'owners')\n" \
  "  if type(p) == 'table' and p.err == nil then\n"      \
  "    return len - p[1]\n"                              \
  "  end\n"                                              \
  "  return len\n"                                       \
  "end\n"

// Send one batch. KEYS: stream, sent, lease:S. ARGV: payload, urls, raw
// length, node, the bells' prefix. Rings the doorbell of the shard's lease
// holder (the counter PREFIX..NODE; kReceiveScript): an owner reads its
// streams only when its bell rang (or at least once a second, for entries
// sent while no lease was held). Returns {batches sent by all nodes, the
// stream's lag}.
inline constexpr const char* kSendScript = CRAWLER_LUA_LAG R"lua(
redis.call('xadd', KEYS[1], '*', 'z', ARGV[1], 'n', ARGV[2], 'b', ARGV[3], 'from', ARGV[4])
local holder = redis.call('get', KEYS[3])
if holder then redis.call('incr', ARGV[5] .. string.match(holder, '^(%S+)')) end
return {redis.call('incr', KEYS[2]), lag(KEYS[1])}
)lua";

// The lag of each stream in KEYS.
inline constexpr const char* kLagScript = CRAWLER_LUA_LAG R"lua(
local out = {}
for i = 1, #KEYS do out[i] = lag(KEYS[i]) end
return out
)lua";
#undef CRAWLER_LUA_LAG

// Receive new entries. KEYS: state, delivered, bell:NODE, busy, then n
// streams, then their n leases. ARGV: node, count, then per stream the
// caller's "NODE EPOCH". Returns {the bell, XREADGROUP's reply or false}:
// the bell read with the entries, so a caller that next finds it unchanged
// (one GET) knows nothing was sent to it since, without reading n streams.
// Counting the delivery and marking this node busy happen atomically with
// it, which is what makes the end test sound. Fenced like acknowledgements:
// a stream is read only while the caller holds its lease with that epoch,
// so a read that reaches Redis late (a node cut off, its command delivered
// after another node took the shard and claimed its pending entries) takes
// nothing: no entry left pending for a consumer that lost the shard.
inline constexpr const char* kReceiveScript =
    "#!lua flags=allow-oom\n" CRAWLER_LUA_STATE R"lua(
local n = (#KEYS - 4) / 2
local bell = redis.call('get', KEYS[3]) or '0'
local args = {'GROUP', 'owners', ARGV[1], 'COUNT', ARGV[2], 'STREAMS'}
local streams = {}
for i = 1, n do
  if redis.call('get', KEYS[4 + n + i]) == ARGV[2 + i] then streams[#streams + 1] = KEYS[4 + i] end
end
if #streams == 0 then return {bell, false} end
for _, k in ipairs(streams) do args[#args + 1] = k end
for _ = 1, #streams do args[#args + 1] = '>' end
local r = redis.call('xreadgroup', unpack(args))
if not r then return {bell, false} end
local got = 0
for _, s in ipairs(r) do got = got + #s[2] end
if got > 0 then
  redis.call('incrby', KEYS[2], got)
  set_state(KEYS[1], KEYS[4], ARGV[1], 'busy')
end
return {bell, r}
)lua";

// Reclaim, fenced like reads. KEYS: n streams, then their n leases. ARGV:
// node, min idle ms, count, then per stream the caller's "NODE EPOCH". For
// each stream whose lease the caller holds with that epoch, the entries
// pending for another consumer (one that read them and no longer holds the
// shard: it died or was cut off before it acknowledged) idle longer than
// min idle become the caller's (XCLAIM). The consumers come from XPENDING's
// summary, so a stream with only the caller's pending costs O(consumers).
// Returns, like XREADGROUP, {{stream, entries}...} of the streams that had
// any.
inline constexpr const char* kReclaimScript = R"lua(#!lua flags=allow-oom
local n = #KEYS / 2
local out = {}
for i = 1, n do
  if redis.call('get', KEYS[n + i]) == ARGV[3 + i] then
    local summary = redis.call('xpending', KEYS[i], 'owners')
    local ids = {}
    for _, c in ipairs(summary[4] or {}) do
      if c[1] ~= ARGV[1] then
        local p = redis.call('xpending', KEYS[i], 'owners', 'IDLE', ARGV[2], '-', '+',
                             ARGV[3], c[1])
        for _, e in ipairs(p) do ids[#ids + 1] = e[1] end
      end
    end
    if #ids > 0 then
      out[#out + 1] = {KEYS[i], redis.call('xclaim', KEYS[i], 'owners', ARGV[1], ARGV[2],
                                           unpack(ids))}
    end
  end
end
return out
)lua";

// The end test's first look, O(1) whatever the node count. KEYS: done, sent,
// delivered, busy, and ARGV: the liveness keys' prefix. Returns 1 (done), 0
// (not done: a batch is unread, or a live node is busy; one busy node is
// looked at, a random one) or 2 (the full test, kDoneScript, decides).
inline constexpr const char* kDoneHintScript = R"lua(
if redis.call('exists', KEYS[1]) == 1 then return 1 end
if tonumber(redis.call('get', KEYS[2]) or '0') ~=
   tonumber(redis.call('get', KEYS[3]) or '0') then return 0 end
local b = redis.call('srandmember', KEYS[4])
if b and redis.call('exists', ARGV[1] .. b) == 1 then return 0 end
return 2
)lua";

// The end test. KEYS: state, sent, delivered, done, holder, holds,
// alive:NODE... ARGV: takeover (1: cluster.shared_dir), the nodes. A dead
// node (its liveness key expired) is not idle: it will resume from its last
// checkpoint and may find links for the others again; unless, with takeover,
// it is the last holder of no shard (they were all taken over from its
// checkpoint). O(nodes), whatever the shard count: holds has each node's
// count of shards (the lease script keeps it). A job whose leases were taken
// before holds existed has none: the holder hash is walked then.
inline constexpr const char* kDoneScript = R"lua(#!lua flags=allow-oom
if redis.call('exists', KEYS[4]) == 1 then return 1 end
local counted = redis.call('exists', KEYS[6]) == 1
local holders = nil
local holds = function(node)
  if counted then return tonumber(redis.call('hget', KEYS[6], node) or '0') > 0 end
  if not holders then
    holders = {}
    for _, v in ipairs(redis.call('hvals', KEYS[5])) do
      holders[string.match(v, '^(%S+)')] = true
    end
  end
  return holders[node]
end
for i = 2, #ARGV do
  local alive = redis.call('exists', KEYS[5 + i]) == 1
  if not alive and (ARGV[1] ~= '1' or holds(ARGV[i])) then return 0 end
  if alive and redis.call('hget', KEYS[1], ARGV[i]) ~= 'idle' then return 0 end
end
local sent = tonumber(redis.call('get', KEYS[2]) or '0')
local delivered = tonumber(redis.call('get', KEYS[3]) or '0')
if sent ~= delivered then return 0 end
redis.call('set', KEYS[4], '1')
return 1
)lua";

// Leases (fencing). A shard's lease is the key lease:S = "NODE EPOCH" with a
// TTL; epoch:S only grows (INCR at every taking); the hash holder has, by
// shard, the last "NODE EPOCH" that took it (it does not expire).
// Take or renew. KEYS: lease:S..., epoch:S..., holder, source, state, holds,
// busy, source_prev (n shards: 2n + 6; holds counts, by node, the shards it is the last
// holder of, for the end test's O(1) check). A node that takes a shard is marked busy in
// state at once (the end test must not see its "idle" of before, while it loads). ARGV:
// node, ttl ms, takeover (1: this node may take a free shard another node held last, if
// it holds no epoch of it), then per shard the epoch this node holds (0: none). Returns
// per shard {state, epoch, holder, source}: 'held' (renewed), 'taken' (a new epoch),
// 'other' (a live lease of another holder), 'waiting' (free, but another node held it
// last and this node may not take it over); source: "NODE SEQ", the last committed
// checkpoint that holds the shard; and for a shard 'taken', source_prev (kCommitScript):
// where the source's node got the shard from, if its checkpoint before the source lacks
// it
// (''). A process that holds no epoch yet (just started or resumed) takes a
// lease of its node's name: that is an earlier process of this node (Join refuses a
// second live node of one name). A running one never takes it back from a later process:
// it gets 'other'.
inline constexpr const char* kLeaseScript =
    "#!lua flags=allow-oom\n" CRAWLER_LUA_STATE R"lua(
local n = (#KEYS - 6) / 2
local hk, sk = KEYS[2 * n + 1], KEYS[2 * n + 2]
local me = ARGV[1] .. ' '
local ours = function(v) return v and string.sub(v, 1, #me) == me end
local out = {}
for i = 1, n do
  local lk, ek = KEYS[i], KEYS[n + i]
  local shard = string.match(lk, '(%d+)$')
  local cur = redis.call('get', lk)
  local epoch = redis.call('get', ek) or '0'
  local mine = ARGV[3 + i]
  if cur and cur == me .. mine then
    redis.call('pexpire', lk, ARGV[2])
    out[i] = {'held', epoch, cur}
  else
    local last = redis.call('hget', hk, shard)
    local fresh = mine == '0'
    local ok
    if cur then
      ok = fresh and ours(cur)
    else
      ok = not last or last == me .. mine or (fresh and (ours(last) or ARGV[3] == '1'))
    end
    if ok then
      epoch = tostring(redis.call('incr', ek))
      redis.call('set', lk, me .. epoch, 'PX', ARGV[2])
      if last then redis.call('hincrby', KEYS[2 * n + 4], string.match(last, '^(%S+)'), -1) end
      redis.call('hincrby', KEYS[2 * n + 4], ARGV[1], 1)
      redis.call('hset', hk, shard, me .. epoch)
      set_state(KEYS[2 * n + 3], KEYS[2 * n + 5], ARGV[1], 'busy')
      out[i] = {'taken', epoch, me .. epoch}
    elseif cur then
      out[i] = {'other', epoch, cur}
    else
      out[i] = {'waiting', epoch, last}
    end
  end
  out[i][4] = redis.call('hget', sk, shard) or ''
  if out[i][1] == 'taken' then
    out[i][5] = redis.call('hget', KEYS[2 * n + 6], shard) or ''
  end
end
return out
)lua";
#undef CRAWLER_LUA_STATE

// The fenced commit of a published checkpoint. KEYS: holder, source,
// commits, source_prev. ARGV: node, sequence, then "SHARD EPOCH" of each
// shard the checkpoint holds, followed by " NODE SEQ" when the node's
// checkpoint before this one lacks the shard: the checkpoint its state here
// came from (a takeover's or a handoff's source). Refused ({'fenced', shard,
// its holder}) unless this node is still every one's last holder with that
// epoch; else the checkpoint becomes each shard's source (where a taker
// loads it from) and the node's committed one. source_prev keeps, by shard,
// where to load it from should this checkpoint be damaged: the one before
// it on the node's disk falls short (a resume or a taker falls back to it),
// and the giver keeps its handoff checkpoint while source_prev names it.
inline constexpr const char* kCommitScript = R"lua(#!lua flags=allow-oom
local me = ARGV[1] .. ' '
for i = 3, #ARGV do
  local shard, epoch = string.match(ARGV[i], '^(%d+) (%d+)')
  local h = redis.call('hget', KEYS[1], shard)
  if h ~= me .. epoch then return {'fenced', shard, h or ''} end
end
for i = 3, #ARGV do
  local shard, from = string.match(ARGV[i], '^(%d+) %d+ ?(.*)$')
  redis.call('hset', KEYS[2], shard, me .. ARGV[2])
  if from == '' then
    redis.call('hdel', KEYS[4], shard)
  else
    redis.call('hset', KEYS[4], shard, from)
  end
end
redis.call('hset', KEYS[3], ARGV[1], ARGV[2])
return {'ok'}
)lua";

// A leaving node gives its leases up. KEYS: lease:S... ARGV: "NODE EPOCH"
// per shard. Deletes each lease still this node's (the holder hash keeps its
// name: the shard is taken over from its last commit).
inline constexpr const char* kReleaseScript = R"lua(#!lua flags=allow-oom
local n = 0
for i = 1, #KEYS do
  if redis.call('get', KEYS[i]) == ARGV[i] then
    redis.call('del', KEYS[i])
    n = n + 1
  end
end
return n
)lua";

// Acknowledge and trim, fenced. KEYS: stream, lease:S. ARGV: "NODE EPOCH"
// (the caller's lease), the trim point when nothing is left pending (just
// past the newest ID acknowledged), the IDs. Refused unless the caller holds
// the lease with that epoch: returns {'fenced', the lease's value or ''}.
// Else {'ok', entries still pending}; trims below the oldest pending entry
// (XTRIM MINID, never MAXLEN), or, with none pending, everything delivered:
// acknowledgements come out of order (a taker acknowledges the entries it
// claimed from a dead owner after newer ones were), and an acknowledged entry
// left in the stream would count as lag for ever (the senders would hold
// their batches for it).
inline constexpr const char* kAckScript = R"lua(#!lua flags=allow-oom
local cur = redis.call('get', KEYS[2])
if cur ~= ARGV[1] then return {'fenced', cur or ''} end
for i = 3, #ARGV, 1000 do
  redis.call('xack', KEYS[1], 'owners', unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
local p = redis.call('xpending', KEYS[1], 'owners')
local minid = ARGV[2]
if p[1] > 0 then
  minid = p[2]
else
  for _, g in ipairs(redis.call('xinfo', 'groups', KEYS[1])) do
    local f = {}
    for i = 1, #g, 2 do f[g[i]] = g[i + 1] end
    local ms, seq = string.match(f['last-delivered-id'] or '', '^(%d+)-(%d+)$')
    if f['name'] == 'owners' and ms then minid = ms .. '-' .. tostring(tonumber(seq) + 1) end
  end
end
redis.call('xtrim', KEYS[1], 'MINID', minid)
return {'ok', p[1]}
)lua";

// OUT/handoff/SEQ/: a handoff's checkpoint, kept for the shards' new owners.
inline constexpr const char* kHandoffDir = "handoff";

inline constexpr const char* kOutboxHeader = "crawler-outbox 1\n";

inline std::string Hex64(uint64_t v) { return fmt::format("{:016x}", v); }

// "a.b = 1" lines of the job's config as one JSON object, and its hash.
// crawl.max_duration_s is each node's own run (a node may --resume with
// another), not the job's.
inline std::string JobConfigJson(const Config& config) {
  json::object o;
  for (const auto& [key, value] :
       ConfigEntries(config, {"crawl", "url", "dedup", "recrawl"}))
    if (key != "crawl.max_duration_s") o[key] = value;
  return json::serialize(o);
}

inline std::string DifferingKeys(const std::string& ours, const std::string& theirs) {
  boost::system::error_code ec;
  json::value a = json::parse(ours, ec), b = json::parse(theirs, ec);
  if (ec || !a.is_object() || !b.is_object()) return "(the job's config is unreadable)";
  std::string out;
  auto add = [&](std::string_view key, const json::value* mine, const json::value* job) {
    out += (out.empty() ? "" : ", ") + std::string(key) +
           " (job: " + (job ? json::serialize(*job) : "unset") +
           ", here: " + (mine ? json::serialize(*mine) : "unset") + ")";
  };
  for (const auto& [k, v] : a.as_object()) {
    const json::value* other = b.as_object().if_contains(k);
    if (other == nullptr || *other != v) add(k, &v, other);
  }
  for (const auto& [k, v] : b.as_object()) {
    if (!a.as_object().contains(k)) add(k, nullptr, &v);
  }
  return out;
}

inline Status Refused(const std::string& job, const std::string& why) {
  return Status::Error(Status::Code::kInvalidArgument,
                       "cluster job '" + job + "': refused: " + why);
}

inline std::string Compress(const std::string& raw) {
  uLongf size = compressBound(raw.size());
  std::string out(size, '\0');
  compress2(reinterpret_cast<Bytef*>(out.data()), &size,
            reinterpret_cast<const Bytef*>(raw.data()), raw.size(), 1);
  out.resize(size);
  return out;
}

inline bool Uncompress(std::string_view z, size_t raw_len, std::string* out) {
  if (raw_len > (64u << 20)) return false;
  out->assign(raw_len, '\0');
  uLongf size = raw_len;
  return uncompress(reinterpret_cast<Bytef*>(out->data()), &size,
                    reinterpret_cast<const Bytef*>(z.data()), z.size()) == Z_OK &&
         size == raw_len;
}

// One URL as a wire line: "url \t depth \t redirects \t referrer [\t s] \n"
// ("s": a sitemap), what ParseLines reads.
inline void AppendLine(const frontier::UrlEntry& e, std::string* lines) {
  *lines += e.url;
  *lines += '\t';
  *lines += std::to_string(e.depth);
  *lines += '\t';
  *lines += std::to_string(e.redirects);
  *lines += '\t';
  *lines += e.referrer;
  if (e.kind == frontier::UrlEntry::Kind::kSitemap) *lines += "\ts";
  *lines += '\n';
}

// "url \t depth \t redirects \t referrer [\t s] \n" lines -> entries ("s": a
// sitemap). False: malformed.
inline bool ParseLines(std::string_view text, std::vector<frontier::UrlEntry>* out) {
  std::vector<frontier::UrlEntry> got;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    if (nl == std::string_view::npos) return false;
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    std::string_view f[4];
    for (int i = 0; i < 3; ++i) {
      size_t tab = line.find('\t');
      if (tab == std::string_view::npos) return false;
      f[i] = line.substr(0, tab);
      line.remove_prefix(tab + 1);
    }
    f[3] = line;
    // An optional fifth field: "s" for a sitemap (Kind::kSitemap).
    bool sitemap = false;
    if (size_t tab = f[3].find('\t'); tab != std::string_view::npos) {
      sitemap = f[3].substr(tab + 1) == "s";
      if (!sitemap) return false;
      f[3] = f[3].substr(0, tab);
    }
    frontier::UrlEntry e;
    if (sitemap) e.kind = frontier::UrlEntry::Kind::kSitemap;
    e.url = std::string(f[0]);
    auto d = std::from_chars(f[1].data(), f[1].data() + f[1].size(), e.depth);
    auto r = std::from_chars(f[2].data(), f[2].data() + f[2].size(), e.redirects);
    if (e.url.empty() || d.ec != std::errc() || r.ec != std::errc()) return false;
    e.referrer = std::string(f[3]);
    got.push_back(std::move(e));
  }
  for (auto& e : got) out->push_back(std::move(e));
  return true;
}

using StreamId = std::pair<uint64_t, uint64_t>;  // "ms-seq"

inline StreamId ParseStreamId(std::string_view id) {
  StreamId out{0, 0};
  size_t dash = id.find('-');
  std::from_chars(id.data(), id.data() + std::min(dash, id.size()), out.first);
  if (dash != std::string_view::npos)
    std::from_chars(id.data() + dash + 1, id.data() + id.size(), out.second);
  return out;
}

inline const redisReply* Element(const redisReply* r, size_t i) {
  return r != nullptr && r->type == REDIS_REPLY_ARRAY && i < r->elements ? r->element[i]
                                                                         : nullptr;
}

}  // namespace crawler::engine::cluster_wire

#endif  // CRAWLER_CLUSTER_WIRE_H_
