-- Arrays made and dropped in a loop, then mgpu.empty_cache(): run by
-- spec/pool_spec.lua against the stand-in driver, which counts the pool's
-- allocations, frees and trims.
local mgpu = require "mgpu"
local twice = mgpu.kernel{ name = "twice", out_shape = function(a) return mgpu.shape(a.shape, a.dtype) end,
  body = function(a, o) o:store(a:load() * 2) end }
local x = mgpu.random.normal(256)
for _ = 1, 50 do twice(x) end
collectgarbage(); collectgarbage()
mgpu.empty_cache()
print("done")
