#!lua flags=allow-oom
if redis.call('exists', KEYS[2]) == 0 and redis.call('scard', KEYS[1]) >= tonumber(ARGV[1]) then
  redis.call('set', KEYS[2], '1')
end
if redis.call('exists', KEYS[2]) == 1 then return redis.call('smembers', KEYS[1]) end
return false
