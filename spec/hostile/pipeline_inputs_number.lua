-- expect: 6: emit_pipeline in_specs must be a table of mgpu.BlockSpec{...}
-- in_specs = 5.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    local p = mgpu.emit_pipeline(function() end, { grid = { 2 }, in_specs = 5 })
  end }
k(mgpu.zeros({ 64, 64 }))
