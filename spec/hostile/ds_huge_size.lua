-- expect: 7: view: &gmem f32[4611686018427387904,64] has more than 2^53 elements
-- Loading a dynamic slice of 2^62 rows.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  scratch_shapes = { mgpu.SMEM({ 64, 64 }, "bf16", { transforms = { mgpu.transforms.tiling{ 8, 64 }, mgpu.transforms.swizzle(128) } }), mgpu.Barrier{} },
  body = function(x, o, s, bar)
    o:store(x:at(mgpu.ds(mgpu.program_id(0), 2 ^ 62)):load())
  end }
k(mgpu.zeros({ 64, 64 }))
