#!lua flags=allow-oom
redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('hset', KEYS[2], ARGV[3], ARGV[4])
if ARGV[5] == '-' then
  redis.call('zrem', KEYS[3], ARGV[3])
elseif ARGV[5] ~= '' then
  redis.call('zadd', KEYS[3], ARGV[5], ARGV[3])
end
return 1
