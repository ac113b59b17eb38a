-- expect: 6: ds(9, 4) starts outside dimension 0 of size 8
-- A constant slice that starts past the ref's end.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o)
    o:store(x:at(mgpu.ds(9, 4)):load())
  end }
k(mgpu.zeros(8))
