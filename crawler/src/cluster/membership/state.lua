#!lua flags=allow-oom
-- include: lib_state.lua

set_state(KEYS[1], KEYS[2], ARGV[1], ARGV[2])
return 1
