-- expect: 7: wgmma: operand B needs swizzled SMEM
-- wgmma on f32 SMEM operands.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  scratch_shapes = { mgpu.SMEM({ 64, 64 }, "bf16", { transforms = { mgpu.transforms.tiling{ 8, 64 }, mgpu.transforms.swizzle(128) } }), mgpu.Barrier{} },
  body = function(x, o, s, bar)
    mgpu.run_scoped(function(acc, a) mgpu.wgmma(acc, a, a) end, mgpu.ACC({ 64, 64 }), mgpu.SMEM({ 64, 64 }, "f32"))
  end }
k(mgpu.zeros({ 64, 64 }))
