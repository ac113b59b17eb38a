-- expect: 6: emit_pipeline_warp_specialized: wg_axis must name the warpgroup axis
-- A warp-specialized pipeline without wg_axis.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    local p = mgpu.emit_pipeline_warp_specialized(function() end, { grid = { 2 }, memory_registers = 40, num_compute_wgs = 1 })
  end }
k(mgpu.zeros({ 64, 64 }))
