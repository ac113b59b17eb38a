-- expect: 6: unknown axis name 'sm'
-- nd_loop over a grid axis the kernel does not name.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    mgpu.nd_loop({ 4 }, { collective_axes = "sm" }, function(info) end)
  end }
k(mgpu.zeros({ 64, 64 }))
