
local used = string.match(redis.call('info', 'memory'), 'used_memory:(%d+)') or '0'
return redis.call('xadd', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'n', ARGV[2],
                  'f', ARGV[3], 'm', used, 'b', ARGV[4])
