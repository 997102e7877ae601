#!lua flags=allow-oom
return redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
