-- expect: 6: emit_pipeline_warp_specialized: memory_registers is required
-- A warp-specialized pipeline without memory_registers.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    local p = mgpu.emit_pipeline_warp_specialized(function() end, { grid = { 2 }, num_compute_wgs = 1, wg_axis = "wg" })
  end }
k(mgpu.zeros({ 64, 64 }))
