-- expect: 7: bad block
-- An index map that raises a string.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    local p = mgpu.emit_pipeline(function(i, xs) end,
      { grid = { 2 }, in_specs = { mgpu.BlockSpec{ { 32, 64 }, function(i) error("bad block") end } } })
    p(x)
  end }
k(mgpu.zeros({ 64, 64 }))
