-- expect: 7: store: the ref is a barrier, which holds no data
-- Storing into a barrier.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  scratch_shapes = { mgpu.SMEM({ 64, 64 }, "bf16", { transforms = { mgpu.transforms.tiling{ 8, 64 }, mgpu.transforms.swizzle(128) } }), mgpu.Barrier{} },
  body = function(x, o, s, bar)
    bar:store(1)
  end }
k(mgpu.zeros({ 64, 64 }))
