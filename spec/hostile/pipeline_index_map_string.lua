-- expect: 7: emit_pipeline input 1: index_map result 1 must be an integer or a traced scalar, got string
-- An index map returning a string.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    local p = mgpu.emit_pipeline(function(i, xs) end,
      { grid = { 2 }, in_specs = { mgpu.BlockSpec{ { 32, 64 }, function(i) return "row", 0 end } } })
    p(x)
  end }
k(mgpu.zeros({ 64, 64 }))
