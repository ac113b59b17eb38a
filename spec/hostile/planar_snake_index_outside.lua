-- expect: 6: planar_snake: index 100 is outside the 4x4 grid (0 to 15)
-- A constant index past the grid once returned a point outside it, (2, 24).
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 2 }, "i32"),
  body = function(o)
    local i, j = mgpu.planar_snake(100, { 4, 4 }, 1, 2)
    o:at(0):store(mgpu.const(i))
    o:at(1):store(mgpu.const(j))
  end }
k()
