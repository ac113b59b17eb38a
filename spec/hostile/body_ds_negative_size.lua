-- expect: 6: ds size must be at least 1, got -4
-- mgpu.ds with a negative size.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o)
    o:store(x:at(mgpu.ds(0, -4)):load())
  end }
k(mgpu.zeros(8))
