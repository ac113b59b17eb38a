-- expect: 6: nd_loop grid
-- nd_loop over a negative grid.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    mgpu.nd_loop({ -4 }, function(info) end)
  end }
k(mgpu.zeros({ 64, 64 }))
