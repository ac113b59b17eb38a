-- expect: 6: ACC: M must be a multiple of 64 up to 256
-- An accumulator of 10 rows (not a multiple of 64).
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.run_scoped(function(acc) end, mgpu.ACC({ 10, 64 }))
  end }
k()
