-- expect: 7: SMEM: rank 9 is more than 8
-- run_scoped SMEM of rank 9.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  scratch_shapes = { mgpu.SMEM({ 64, 64 }, "bf16", { transforms = { mgpu.transforms.tiling{ 8, 64 }, mgpu.transforms.swizzle(128) } }), mgpu.Barrier{} },
  body = function(x, o, s, bar)
    mgpu.run_scoped(function(r) end, mgpu.SMEM({ 1, 1, 1, 1, 1, 1, 1, 1, 1 }, "f32"))
  end }
k(mgpu.zeros({ 64, 64 }))
