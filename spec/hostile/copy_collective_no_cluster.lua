-- expect: 7: copy_gmem_to_smem: 'x' is not a cluster axis (cluster_names: none)
-- A multicast copy in a kernel without a cluster.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64 }),
  scratch_shapes = { mgpu.SMEM({ 64 }, "f32"), mgpu.Barrier{} },
  body = function(x, o, s, bar)
    mgpu.copy_gmem_to_smem(x, s, bar, { collective_axes = "x" })
    mgpu.barrier_wait(bar)
  end }
k(mgpu.zeros(64))
