-- expect: 7: astype between bf16 and f8e4m3: f8 conversions are not supported yet
-- Adding f8 arrays.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  scratch_shapes = { mgpu.SMEM({ 64, 64 }, "bf16", { transforms = { mgpu.transforms.tiling{ 8, 64 }, mgpu.transforms.swizzle(128) } }), mgpu.Barrier{} },
  body = function(x, o, s, bar)
    local y = s:load():astype("f8e4m3") + s:load():astype("f8e4m3")
  end }
k(mgpu.zeros({ 64, 64 }))
