-- expect: 7: copy_gmem_to_smem: oob must be "zeros", "undefined" or "promise_in_bounds", got clip
-- An unknown out-of-bounds mode.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64 }),
  scratch_shapes = { mgpu.SMEM({ 64 }, "f32"), mgpu.Barrier{} },
  body = function(x, o, s, bar)
    mgpu.copy_gmem_to_smem(x, s, bar, { oob = "clip" })
  end }
k(mgpu.zeros(64))
