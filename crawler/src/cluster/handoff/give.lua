#!lua flags=allow-oom
if redis.call('exists', KEYS[4]) == 0 then return {} end
local load = redis.call('zscore', KEYS[5], ARGV[1])
if not load or tonumber(load) > tonumber(ARGV[3]) then return {} end
if not redis.call('set', KEYS[3], '1', 'NX', 'PX', ARGV[2]) then return {} end
local given = {}
for i = 6, #KEYS do
  if redis.call('get', KEYS[i]) == ARGV[i - 2] then
    local shard = string.match(KEYS[i], '(%d+)$')
    redis.call('hset', KEYS[1], shard, ARGV[1])
    given[#given + 1] = shard
  end
end
if #given > 0 then redis.call('incr', KEYS[2]) end
return given
