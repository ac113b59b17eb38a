-- expect: 7: at: index 4611686018427387904 is out of range for dimension 0 of size 64
-- A static slice starting at 2^62.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  scratch_shapes = { mgpu.SMEM({ 64, 64 }, "bf16", { transforms = { mgpu.transforms.tiling{ 8, 64 }, mgpu.transforms.swizzle(128) } }), mgpu.Barrier{} },
  body = function(x, o, s, bar)
    local v = x:at(mgpu.ds(2 ^ 62, 4))
  end }
k(mgpu.zeros({ 64, 64 }))
