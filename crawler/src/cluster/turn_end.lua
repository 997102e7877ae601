#!lua flags=allow-oom
if redis.call('hdel', KEYS[1], ARGV[2]) == 0 then return 0 end
-- A turn given back untaken: its claim goes with it (the next start still
-- waits the delay after now).
if redis.call('hget', KEYS[1], 'claim') == ARGV[2] then redis.call('hdel', KEYS[1], 'claim') end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local next = math.max(tonumber(redis.call('hget', KEYS[1], 'next') or 0),
                      now + tonumber(ARGV[1]))
redis.call('hset', KEYS[1], 'next', next)
local ttl = redis.call('pttl', KEYS[1])
if ttl < tonumber(ARGV[1]) then redis.call('pexpire', KEYS[1], ARGV[1]) end
return 1
