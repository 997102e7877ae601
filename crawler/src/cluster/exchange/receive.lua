#!lua flags=allow-oom
-- include: lib_state.lua

local n = (#KEYS - 5) / 2
local bell = redis.call('get', KEYS[3]) or '0'
local v = redis.call('get', KEYS[5]) or '0'
local args = {'GROUP', 'owners', ARGV[1], 'COUNT', ARGV[2], 'STREAMS'}
local streams = {}
for i = 1, n do
  if redis.call('get', KEYS[5 + n + i]) == ARGV[2 + i] then streams[#streams + 1] = KEYS[5 + i] end
end
if #streams == 0 then return {bell, false, v} end
for _, k in ipairs(streams) do args[#args + 1] = k end
for _ = 1, #streams do args[#args + 1] = '>' end
local r = redis.call('xreadgroup', unpack(args))
if not r then return {bell, false, v} end
local got = 0
for _, s in ipairs(r) do got = got + #s[2] end
if got > 0 then
  redis.call('incrby', KEYS[2], got)
  set_state(KEYS[1], KEYS[4], ARGV[1], 'busy')
end
return {bell, r, v}
