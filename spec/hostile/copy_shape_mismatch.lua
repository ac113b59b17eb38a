-- expect: 7: copy_gmem_to_smem: shapes &gmem f32[64] and &smem f32[32] do not match
-- A TMA load between refs of different shapes.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64 }),
  scratch_shapes = { mgpu.SMEM({ 32 }, "f32"), mgpu.Barrier{} },
  body = function(x, o, s, bar)
    mgpu.copy_gmem_to_smem(x, s, bar)
    mgpu.barrier_wait(bar)
  end }
k(mgpu.zeros(64))
