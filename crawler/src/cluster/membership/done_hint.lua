
if redis.call('exists', KEYS[1]) == 1 then return 1 end
if tonumber(redis.call('get', KEYS[2]) or '0') ~=
   tonumber(redis.call('get', KEYS[3]) or '0') then return 0 end
local b = redis.call('srandmember', KEYS[4])
if b and redis.call('exists', ARGV[1] .. b) == 1 then return 0 end
return 2
