-- expect: 6: if: operand 1 must be a scalar, got an array
-- mgpu.when on an array of conditions instead of a scalar.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.when(mgpu.broadcast(true, { 4 }), function() end)
  end }
k()
