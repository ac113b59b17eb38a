-- expect: 7: copy_gmem_to_smem: a barrier is required (the copy arrives on it)
-- A TMA load without a barrier.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64 }),
  scratch_shapes = { mgpu.SMEM({ 64 }, "f32") },
  body = function(x, o, s)
    mgpu.copy_gmem_to_smem(x, s)
  end }
k(mgpu.zeros(64))
