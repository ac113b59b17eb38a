-- new-small-copies: Pallas copies a single i32 between GMEM and SMEM; mgpu's copies move rows of
-- 16-byte multiples from 128-byte aligned SMEM ("the copy's rows are 4 bytes").
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({ 1 }, "i32"), scratch_shapes = { mgpu.SMEM({ 1 }, "i32"), mgpu.Barrier{} },
  body = function(x, o, s, bar)
    mgpu.copy_gmem_to_smem(x, s, bar)
    mgpu.barrier_wait(bar)
    o:store(s:load())
  end }
print(k(mgpu.full({ 1 }, 42, "i32")):get(1))
