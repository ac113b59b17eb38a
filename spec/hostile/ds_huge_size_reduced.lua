-- expect: 6: view: &gmem f32[4611686018427387904,64] has more than 2^53 elements
-- Reducing a dynamic slice of 2^62 rows (its element count overflows 64 bits).
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64 }),
  body = function(x, o)
    local v = x:at(mgpu.ds(mgpu.program_id(0), 2 ^ 62)):load():sum(0)
    o:store(v)
  end }
k(mgpu.zeros({ 64, 64 }))
