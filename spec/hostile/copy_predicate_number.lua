-- expect: 7: copy_gmem_to_smem: predicate must be a comparison result or a boolean
-- A number as the copy's predicate.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64 }),
  scratch_shapes = { mgpu.SMEM({ 64 }, "f32"), mgpu.Barrier{} },
  body = function(x, o, s, bar)
    mgpu.copy_gmem_to_smem(x, s, bar, { predicate = 1 })
  end }
k(mgpu.zeros(64))
