-- expect: 6: emit_pipeline grid[1] must be at least 1, got 0
-- A pipeline over a zero grid.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    local p = mgpu.emit_pipeline(function() end, { grid = { 0 } })
  end }
k(mgpu.zeros({ 64, 64 }))
