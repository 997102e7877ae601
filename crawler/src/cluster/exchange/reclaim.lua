#!lua flags=allow-oom
local n = #KEYS / 2
local out = {}
for i = 1, n do
  if redis.call('get', KEYS[n + i]) == ARGV[3 + i] then
    local summary = redis.call('xpending', KEYS[i], 'owners')
    local ids = {}
    for _, c in ipairs(summary[4] or {}) do
      if c[1] ~= ARGV[1] then
        local p = redis.call('xpending', KEYS[i], 'owners', 'IDLE', ARGV[2], '-', '+',
                             ARGV[3], c[1])
        for _, e in ipairs(p) do ids[#ids + 1] = e[1] end
      end
    end
    if #ids > 0 then
      out[#out + 1] = {KEYS[i], redis.call('xclaim', KEYS[i], 'owners', ARGV[1], ARGV[2],
                                           unpack(ids))}
    end
  end
end
return out
