-- expect: 7: fori: unknown option '1'
-- A loop carrying a plain Lua table (taken for the options table).
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  scratch_shapes = { mgpu.SMEM({ 64, 64 }, "bf16", { transforms = { mgpu.transforms.tiling{ 8, 64 }, mgpu.transforms.swizzle(128) } }), mgpu.Barrier{} },
  body = function(x, o, s, bar)
    mgpu.fori(0, 2, function(i, t) return t end, { 1, 2 })
  end }
k(mgpu.zeros({ 64, 64 }))
