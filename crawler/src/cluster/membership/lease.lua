#!lua flags=allow-oom
-- include: lib_state.lua

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
