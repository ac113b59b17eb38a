-- expect: 6: dynamic_scheduling_loop: counter must be a GMEM i32 ref of shape {n}, n >= 2
-- A counter of the wrong dtype.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    mgpu.dynamic_scheduling_loop({ "x" }, { counter = x }, function(info) end)
  end }
k(mgpu.zeros({ 64, 64 }))
