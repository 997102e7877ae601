#!lua flags=allow-oom
-- The turn ARGV[2] was taken: its request started before now, so the next
-- start may come the delay after now rather than after the turn's claim,
-- unless a later turn has been granted since (then `claim` names it).
if redis.call('hget', KEYS[1], 'claim') ~= ARGV[2] then return 0 end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('hdel', KEYS[1], 'claim')
redis.call('hset', KEYS[1], 'next', now + tonumber(ARGV[1]))
return 1
