-- expect: 8: emit_pipeline input 1 must be a ref, got number
-- A pipeline called with a number instead of a ref.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    local p = mgpu.emit_pipeline(function(i, xs) end,
      { grid = { 2 }, in_specs = { mgpu.BlockSpec{ { 32, 64 }, function(i) return i, 0 end } } })
    p(5)
  end }
k(mgpu.zeros({ 64, 64 }))
