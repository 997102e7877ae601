-- include: lib_lag.lua

redis.call('xadd', KEYS[1], '*', 'z', ARGV[1], 'n', ARGV[2], 'b', ARGV[3], 'from', ARGV[4])
local holder = redis.call('get', KEYS[3])
if holder then redis.call('incr', ARGV[5] .. string.match(holder, '^(%S+)')) end
return {redis.call('incr', KEYS[2]), lag(KEYS[1])}
