-- new-commit-required: JAX's tests store registers to SMEM and copy them to GMEM without
-- commit_smem (a race on the GPU that Pallas does not check); mgpu's interpreter refuses it.
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({ 256 }, "f32"), scratch_shapes = { mgpu.SMEM({ 256 }, "f32") },
  body = function(o, s)
    s:store(mgpu.broadcast(1, { 256 }, "f32"))
    mgpu.copy_smem_to_gmem(s, o)
    mgpu.wait_smem_to_gmem(0)
  end }
print(k():get(1))
