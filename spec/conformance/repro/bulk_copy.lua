-- new-bulk-copy: Pallas copies a contiguous SMEM range to GMEM with the plain bulk copy
-- (cp.async.bulk.global.shared::cta), any length; mgpu always takes the TMA tensor store,
-- whose boxes hold at most 256 elements along a dim.
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({ 1024 }, "f32"), scratch_shapes = { mgpu.SMEM({ 1024 }, "f32") },
  body = function(o, s)
    s:store(mgpu.broadcast(1, { 1024 }, "f32"))
    mgpu.commit_smem()
    mgpu.copy_smem_to_gmem(s, o)
    mgpu.wait_smem_to_gmem(0)
  end }
print(k():get(1024))
