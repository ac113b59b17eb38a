-- expect: 6: dynamic_scheduling_loop: Hopper has no cluster launch control
-- dynamic_scheduling_loop without a counter.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    mgpu.dynamic_scheduling_loop({ "x" }, {}, function(info) end)
  end }
k(mgpu.zeros({ 64, 64 }))
