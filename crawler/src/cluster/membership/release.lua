#!lua flags=allow-oom
local n = 0
for i = 1, #KEYS do
  if redis.call('get', KEYS[i]) == ARGV[i] then
    redis.call('del', KEYS[i])
    n = n + 1
  end
end
return n
