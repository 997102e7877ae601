#!lua flags=allow-oom
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local delay, conns, lapse = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local function held(field)
  local node, process = string.match(field, '^(.*):([^:]*):[^:]*$')
  return node ~= nil and redis.call('get', ARGV[5] .. node) == process
end
local f = redis.call('hgetall', KEYS[1])
local next, live = 0, 0
for i = 1, #f, 2 do
  local v = tonumber(f[i + 1])
  if f[i] == 'next' then next = v
  elseif v <= now or not held(f[i]) then redis.call('hdel', KEYS[1], f[i])
  else live = live + 1 end
end
if now < next then return next - now end
-- A connection frees when a request ends, which no one can tell ahead:
-- asked again after the delay, 20 ms at least.
if live >= conns then return math.max(delay, 20) end
redis.call('hset', KEYS[1], ARGV[4], now + lapse, 'next', now + delay)
redis.call('pexpire', KEYS[1], lapse + delay)
return 0
