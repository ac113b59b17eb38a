-- 3000 small arrays made and dropped one after another: more than the
-- stand-in driver's 1024 allocations at once, fewer bytes than the
-- collector's step, so only collecting when an allocation fails keeps this
-- going (run by spec/pool_spec.lua).
local mgpu = require "mgpu"
collectgarbage("stop")          -- as if the Lua heap had not grown enough for a cycle
for _ = 1, 3000 do mgpu.empty({ 256 }, "f32") end
collectgarbage("restart")
print("done")
