-- expect: 6: iota: dimension 3 is out of range for rank 1
-- broadcasted_iota along dimension 3 of a 1-D shape.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    o:store(mgpu.broadcasted_iota("f32", { 4 }, 3))
  end }
k()
