-- expect: 4: mgpu.kernel: scratch_shapes[1] must be mgpu.SMEM(...) or mgpu.Barrier{...}
-- A number among the scratch shapes.
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({ 4 }), scratch_shapes = { 128 }, body = function() end }
