-- new-smem-atomics: Pallas' atomic_add adds a register array into an SMEM ref elementwise; mgpu's
-- atomics take one GMEM element per warpgroup.
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({ 128 }, "f32"), scratch_shapes = { mgpu.SMEM({ 128 }, "f32") },
  body = function(x, o, s)
    s:store(mgpu.broadcast(0, { 128 }, "f32"))
    mgpu.atomic_add(s, x:load())
    o:store(s:load())
  end }
print(pcall(k.lower, k, mgpu.abstract({ 128 }, "f32")))
