-- new-race-detection: races Pallas' interpreter reports and mgpu's does not: a register store to
-- SMEM then a copy_gmem_to_smem into it with no commit_smem between (here); also writes under a copy
-- whose read side alone was awaited, two copies into one buffer without a wait, and two
-- copy_smem_to_gmem into one GMEM range at once.
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({ 4 }, "i32"), scratch_shapes = { mgpu.SMEM({ 4 }, "i32"), mgpu.Barrier{} },
  body = function(x, o, s, bar)
    s:store(100)
    mgpu.copy_gmem_to_smem(x, s, bar)
    mgpu.barrier_wait(bar)
    o:store(s:load())
  end }
print("no race reported:", k(mgpu.full({ 4 }, 42, "i32")):get(1))
