-- expect: 6: shape: at most 8 dimensions, got 300
-- An output of rank 300 (every dimension 1).
local mgpu = require "mgpu"
local shape = {}
for i = 1, 300 do shape[i] = 1 end
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape(shape, "f32"),
  body = function(o) end }
k()
