-- expect: 7: copy_gmem_to_smem: options must be a table
-- A string where the options go.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64 }),
  scratch_shapes = { mgpu.SMEM({ 64 }, "f32"), mgpu.Barrier{} },
  body = function(x, o, s, bar)
    mgpu.copy_gmem_to_smem(x, s, bar, "zeros")
  end }
k(mgpu.zeros(64))
