-- expect: 6: planar_snake: minor_dim must be 0 or 1, got 2
-- planar_snake with minor_dim 2.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    local i, j = mgpu.planar_snake(0, { 4, 4 }, 2, 2)
  end }
k(mgpu.zeros({ 64, 64 }))
