-- expect: 7: at: index -9223372036854775808 is out of range for dimension 0 of size 64
-- A static index of -2^63.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  scratch_shapes = { mgpu.SMEM({ 64, 64 }, "bf16", { transforms = { mgpu.transforms.tiling{ 8, 64 }, mgpu.transforms.swizzle(128) } }), mgpu.Barrier{} },
  body = function(x, o, s, bar)
    local v = x:at(-2 ^ 63)
  end }
k(mgpu.zeros({ 64, 64 }))
