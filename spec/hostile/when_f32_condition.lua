-- expect: 6: if: operand 1 must be a pred scalar (a comparison result), got f32
-- mgpu.when on an f32 scalar.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.when(mgpu.program_id(0):astype("f32"), function() end)
  end }
k()
