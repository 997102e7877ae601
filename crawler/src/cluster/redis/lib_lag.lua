local function lag(key)
  local len = redis.call('xlen', key)
  if len == 0 then return 0 end
  local p = redis.pcall('xpending', key, 'owners')
  if type(p) == 'table' and p.err == nil then
    return len - p[1]
  end
  return len
end
