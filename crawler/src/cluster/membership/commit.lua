#!lua flags=allow-oom
local me = ARGV[1] .. ' '
for i = 3, #ARGV do
  local shard, epoch = string.match(ARGV[i], '^(%d+) (%d+)')
  local h = redis.call('hget', KEYS[1], shard)
  if h ~= me .. epoch then return {'fenced', shard, h or ''} end
end
for i = 3, #ARGV do
  local shard, from = string.match(ARGV[i], '^(%d+) %d+ ?(.*)$')
  redis.call('hset', KEYS[2], shard, me .. ARGV[2])
  if from == '' then
    redis.call('hdel', KEYS[4], shard)
  else
    redis.call('hset', KEYS[4], shard, from)
  end
end
redis.call('hset', KEYS[3], ARGV[1], ARGV[2])
return {'ok'}
