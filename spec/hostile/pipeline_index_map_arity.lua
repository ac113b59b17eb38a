-- expect: 7: emit_pipeline input 1: index_map takes 2 arguments but the grid has 1 axes
-- An index map taking two grid indices in a 1-D pipeline.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    local p = mgpu.emit_pipeline(function(i, xs) end,
      { grid = { 2 }, in_specs = { mgpu.BlockSpec{ { 32, 64 }, function(i, j) return i, j end } } })
    p(x)
  end }
k(mgpu.zeros({ 64, 64 }))
