-- expect: 7: load: the ref is a barrier, which holds no data
-- Loading a transposed view of a barrier array.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  scratch_shapes = { mgpu.SMEM({ 64, 64 }, "bf16", { transforms = { mgpu.transforms.tiling{ 8, 64 }, mgpu.transforms.swizzle(128) } }), mgpu.Barrier{} },
  body = function(x, o, s, bar)
    mgpu.run_scoped(function(b) local v = b:transpose({ 0 }):load() end, mgpu.Barrier{ num_barriers = 4 })
  end }
k(mgpu.zeros({ 64, 64 }))
