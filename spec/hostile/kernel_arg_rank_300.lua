-- expect: 8: argument 1 has 300 dimensions; kernel arrays have at most 8
-- An input of rank 300.
local mgpu = require "mgpu"
local shape = {}
for i = 1, 300 do shape[i] = 1 end
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 1 }, "f32"),
  body = function(x, o) end }
k(mgpu.zeros(shape))
