-- expect: 7: store: shapes &regs f32[64,64] and f32[32,32] do not match
-- Storing a 32x32 array into a 64x64 accumulator.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  scratch_shapes = { mgpu.SMEM({ 64, 64 }, "bf16", { transforms = { mgpu.transforms.tiling{ 8, 64 }, mgpu.transforms.swizzle(128) } }), mgpu.Barrier{} },
  body = function(x, o, s, bar)
    mgpu.run_scoped(function(acc) acc:store(mgpu.broadcast(0.0, { 32, 32 })) end, mgpu.ACC({ 64, 64 }))
  end }
k(mgpu.zeros({ 64, 64 }))
