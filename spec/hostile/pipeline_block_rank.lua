-- expect: 8: emit_pipeline input 1: block_shape has 1 dims but the array [64,64] has 2
-- A 1-D block for a 2-D array.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    local p = mgpu.emit_pipeline(function(i, xs) end,
      { grid = { 2 }, in_specs = { mgpu.BlockSpec{ { 32 }, function(i) return i end } } })
    p(x)
  end }
k(mgpu.zeros({ 64, 64 }))
