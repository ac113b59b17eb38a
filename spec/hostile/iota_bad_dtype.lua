-- expect: 6: unknown dtype float
-- broadcasted_iota of an unknown dtype.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    o:store(mgpu.broadcasted_iota("float", { 4 }, 0))
  end }
k()
