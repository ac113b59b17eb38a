-- expect: 6: ACC: dtype must be f32, f16 or i32
-- A bf16 accumulator.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.run_scoped(function(acc) end, mgpu.ACC({ 64, 64 }, "bf16"))
  end }
k()
