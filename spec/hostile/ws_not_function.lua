-- expect: 6: emit_pipeline_warp_specialized: the body must be a function
-- A warp-specialized pipeline with a table body.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    local p = mgpu.emit_pipeline_warp_specialized({}, { grid = { 2 } })
  end }
k(mgpu.zeros({ 64, 64 }))
