-- expect: 6: planar_snake: shape must be {m, n}
-- planar_snake over a 3-D shape.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    local i, j = mgpu.planar_snake(0, { 2, 2, 2 }, 1, 2)
  end }
k(mgpu.zeros({ 64, 64 }))
