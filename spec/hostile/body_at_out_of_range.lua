-- expect: 6: at: index 10 is out of range for dimension 0 of size 4
-- A constant index past the ref's end.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o)
    o:at(0):store(x:at(10):load())
  end }
k(mgpu.zeros(4))
