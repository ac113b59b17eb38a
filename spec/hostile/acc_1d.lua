-- expect: 6: ACC: the shape must be {M, N}
-- A one-dimensional accumulator.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.run_scoped(function(acc) end, mgpu.ACC({ 64 }))
  end }
k()
