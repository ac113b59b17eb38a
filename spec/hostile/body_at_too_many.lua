-- expect: 6: too many indices: ref of rank 1 indexed with 2
-- Two indices on a 1-D ref.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o)
    o:store(x:at(0, 0):load())
  end }
k(mgpu.zeros(4))
