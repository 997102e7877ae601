#!lua flags=allow-oom
local cur = redis.call('get', KEYS[2])
if cur ~= ARGV[1] then return {'fenced', cur or ''} end
for i = 3, #ARGV, 1000 do
  redis.call('xack', KEYS[1], 'owners', unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
local p = redis.call('xpending', KEYS[1], 'owners')
local minid = ARGV[2]
if p[1] > 0 then
  minid = p[2]
else
  for _, g in ipairs(redis.call('xinfo', 'groups', KEYS[1])) do
    local f = {}
    for i = 1, #g, 2 do f[g[i]] = g[i + 1] end
    local ms, seq = string.match(f['last-delivered-id'] or '', '^(%d+)-(%d+)$')
    if f['name'] == 'owners' and ms then minid = ms .. '-' .. tostring(tonumber(seq) + 1) end
  end
end
redis.call('xtrim', KEYS[1], 'MINID', minid)
return {'ok', p[1]}
