-- new-unawaited-store: a Pallas kernel may end with its last copy_smem_to_gmem unawaited (the
-- kernel's end waits); mgpu's interpreter reports "copy_smem_to_gmem was never awaited".
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({ 256 }, "f32"), scratch_shapes = { mgpu.SMEM({ 256 }, "f32") },
  body = function(o, s)
    s:store(mgpu.broadcast(1, { 256 }, "f32"))
    mgpu.commit_smem()
    mgpu.copy_smem_to_gmem(s, o)
  end }
print(k():get(1))
