-- expect: 6: cond: the false branch returned i32 as value 1 but the true branch f32
-- Branches returning different dtypes.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.cond(mgpu.program_id(0):eq(0), function() return mgpu.const(1.5) end, function() return mgpu.const(1) end)
  end }
k()
