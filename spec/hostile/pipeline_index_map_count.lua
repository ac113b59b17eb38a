-- expect: 7: emit_pipeline input 1: index_map returned 1 value, expected 2 (one per dim of the array [64,64])
-- An index map returning one index for a 2-D block.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    local p = mgpu.emit_pipeline(function(i, xs) end,
      { grid = { 2 }, in_specs = { mgpu.BlockSpec{ { 32, 64 }, function(i) return i end } } })
    p(x)
  end }
k(mgpu.zeros({ 64, 64 }))
