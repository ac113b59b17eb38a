-- expect: 7: wgmma: shapes do not chain
-- wgmma whose operands do not chain (K of 64 and 32).
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  scratch_shapes = { mgpu.SMEM({ 64, 64 }, "bf16", { transforms = { mgpu.transforms.tiling{ 8, 64 }, mgpu.transforms.swizzle(128) } }), mgpu.Barrier{} },
  body = function(x, o, s, bar)
    mgpu.run_scoped(function(acc, b) mgpu.wgmma(acc, s, b) end, mgpu.ACC({ 64, 64 }), mgpu.SMEM({ 32, 64 }, "bf16", { transforms = { mgpu.transforms.tiling{ 8, 64 }, mgpu.transforms.swizzle(128) } }))
  end }
k(mgpu.zeros({ 64, 64 }))
