-- expect: 6: unknown dtype float
-- mgpu.const of an unknown dtype.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    local c = mgpu.const(1, "float")
  end }
k()
