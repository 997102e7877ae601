-- include: lib_lag.lua

local out = {}
for i = 1, #KEYS do out[i] = lag(KEYS[i]) end
return out
