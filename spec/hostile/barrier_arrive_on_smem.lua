-- expect: 7: barrier_arrive: operand 1 must be a barrier (mgpu.Barrier{...}), got &smem f32[128]
-- barrier_arrive on an SMEM buffer.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  scratch_shapes = { mgpu.SMEM({ 128 }, "f32") },
  body = function(o, s)
    mgpu.barrier_arrive(s)
  end }
k()
