
local all = redis.call('smembers', KEYS[1])
table.sort(all)
local live = {}
for _, n in ipairs(all) do
  if redis.call('exists', ARGV[1] .. n) == 1 then live[#live + 1] = n end
end
local v = redis.call('get', KEYS[2]) or '0'
local assign = false
if v ~= ARGV[2] then assign = redis.call('hgetall', KEYS[3]) end
local least = false
if ARGV[3] == '1' then
  local low = redis.call('zrange', KEYS[4], 0, 7, 'WITHSCORES')
  for i = 1, #low, 2 do
    local n = low[i]
    if redis.call('exists', ARGV[1] .. n) == 0 then
      redis.call('zrem', KEYS[4], n)
    elseif n ~= ARGV[4] and redis.call('exists', ARGV[5] .. n) == 0 then
      least = {n, low[i + 1]}
      break
    end
  end
end
return {all, live, v, assign, least}
