-- new-copy-predicate-barrier: a copy_gmem_to_smem whose predicate is false still arrives on its
-- barrier in Pallas (the wait returns); in mgpu it does not, and the wait deadlocks.
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({ 128 }, "f32"), scratch_shapes = { mgpu.SMEM({ 128 }, "f32"), mgpu.Barrier{} },
  body = function(x, o, s, bar)
    mgpu.copy_gmem_to_smem(x, s, bar, { predicate = false })
    mgpu.barrier_wait(bar)
    o:store(mgpu.broadcast(0, { 128 }, "f32"))
  end }
print(k(mgpu.zeros({ 128 }, "f32")):get(1))
