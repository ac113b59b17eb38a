-- expect: 7: copy_gmem_to_smem: operand 1 must be a GMEM ref (the source), got &smem f32[64]
-- copy_gmem_to_smem with source and destination swapped.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64 }),
  scratch_shapes = { mgpu.SMEM({ 64 }, "f32"), mgpu.Barrier{} },
  body = function(x, o, s, bar)
    mgpu.copy_gmem_to_smem(s, x, bar)
    mgpu.barrier_wait(bar)
  end }
k(mgpu.zeros(64))
