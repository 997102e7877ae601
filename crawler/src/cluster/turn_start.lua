#!lua flags=allow-oom
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local delay, conns, lapse = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local claim = tonumber(ARGV[6])
local function held(field)
  local node, process = string.match(field, '^(.*):([^:]*):[^:]*$')
  return node ~= nil and redis.call('get', ARGV[5] .. node) == process
end
local f = redis.call('hgetall', KEYS[1])
local next, live, claimed = 0, 0, false
for i = 1, #f, 2 do
  if f[i] == 'next' then next = tonumber(f[i + 1])
  elseif f[i] == 'claim' then claimed = true
  else
    if tonumber(f[i + 1]) <= now or not held(f[i]) then redis.call('hdel', KEYS[1], f[i])
    else live = live + 1 end
  end
end
-- A turn granted and not yet taken: asked again sooner than its claim
-- ends, as it is likely taken well before.
if now < next then
  if claimed then return math.min(next - now, math.max(delay, 20)) end
  return next - now
end
-- A connection frees when a request ends, which no one can tell ahead:
-- asked again after the delay, 20 ms at least.
if live >= conns then return math.max(delay, 20) end
-- The next start waits the delay after the end of this turn's claim (the
-- request starts some time in it); turn_taken.lua brings it back once the
-- request has started.
redis.call('hset', KEYS[1], ARGV[4], now + lapse, 'next', now + delay + claim)
if claim > 0 then redis.call('hset', KEYS[1], 'claim', ARGV[4]) end
redis.call('pexpire', KEYS[1], lapse + delay + claim)
return 0
