-- expect: 9: copy_smem_to_gmem was never awaited
-- A TMA store nobody waits for.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64 }),
  scratch_shapes = { mgpu.SMEM({ 64 }, "f32") },
  body = function(o, s)
    s:store(mgpu.broadcast(1.0, { 64 }))
    mgpu.commit_smem()
    mgpu.copy_smem_to_gmem(s, o)
  end }
k()
