-- expect: 6: planar_snake: the index must be an integer or a traced scalar
-- planar_snake of a string index.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    local i, j = mgpu.planar_snake("0", { 4, 4 }, 1, 2)
  end }
k(mgpu.zeros({ 64, 64 }))
