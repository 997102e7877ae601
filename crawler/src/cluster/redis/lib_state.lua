local function set_state(state, busy, node, v)
  redis.call('hset', state, node, v)
  if v == 'busy' then
    redis.call('sadd', busy, node)
  else
    redis.call('srem', busy, node)
  end
end
