#!lua flags=allow-oom
if redis.call('exists', KEYS[4]) == 1 then return 1 end
local counted = redis.call('exists', KEYS[6]) == 1
local holders = nil
local holds = function(node)
  if counted then return tonumber(redis.call('hget', KEYS[6], node) or '0') > 0 end
  if not holders then
    holders = {}
    for _, v in ipairs(redis.call('hvals', KEYS[5])) do
      holders[string.match(v, '^(%S+)')] = true
    end
  end
  return holders[node]
end
for i = 2, #ARGV do
  local alive = redis.call('exists', KEYS[5 + i]) == 1
  if not alive and (ARGV[1] ~= '1' or holds(ARGV[i])) then return 0 end
  if alive and redis.call('hget', KEYS[1], ARGV[i]) ~= 'idle' then return 0 end
end
local sent = tonumber(redis.call('get', KEYS[2]) or '0')
local delivered = tonumber(redis.call('get', KEYS[3]) or '0')
if sent ~= delivered then return 0 end
redis.call('set', KEYS[4], '1')
return 1
