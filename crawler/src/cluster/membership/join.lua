#!lua flags=allow-oom
if redis.call('exists', KEYS[1]) == 0 then
  if ARGV[9] ~= '' then return {'missing', ''} end
  redis.call('hset', KEYS[1], 'shards', ARGV[3], 'seed', ARGV[4],
             'config_hash', ARGV[5], 'config', ARGV[6], 'incarnation', ARGV[10],
             'weights', ARGV[11])
end
local meta = redis.call('hmget', KEYS[1], 'shards', 'seed', 'config_hash', 'config',
                        'incarnation', 'weights')
if ARGV[9] ~= '' and meta[5] ~= ARGV[9] then return {'incarnation', meta[5] or ''} end
if meta[1] ~= ARGV[3] then return {'shards', meta[1]} end
if meta[3] ~= ARGV[5] then return {'config', meta[4]} end
local alive = redis.call('get', KEYS[4])
if alive and alive ~= ARGV[2] then return {'duplicate', alive} end
if ARGV[8] ~= '1' and redis.call('exists', KEYS[3]) == 1 and
   redis.call('sismember', KEYS[2], ARGV[1]) == 0 then
  return {'closed', table.concat(redis.call('smembers', KEYS[2]), ',')}
end
redis.call('sadd', KEYS[2], ARGV[1])
redis.call('set', KEYS[4], ARGV[2], 'PX', ARGV[7])
return {'ok', meta[2], meta[5] or '', meta[6] or ''}
