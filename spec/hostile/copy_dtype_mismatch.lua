-- expect: 7: copy_gmem_to_smem: dtypes f32 and bf16 do not match
-- A TMA load from f32 GMEM into bf16 SMEM.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64 }),
  scratch_shapes = { mgpu.SMEM({ 64 }, "bf16"), mgpu.Barrier{} },
  body = function(x, o, s, bar)
    mgpu.copy_gmem_to_smem(x, s, bar)
    mgpu.barrier_wait(bar)
  end }
k(mgpu.zeros(64))
