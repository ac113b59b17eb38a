-- expect: 6: planar_snake: tile_width must be at least 1, got 0
-- planar_snake with a zero tile width.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    local i, j = mgpu.planar_snake(0, { 4, 4 }, 1, 0)
  end }
k(mgpu.zeros({ 64, 64 }))
