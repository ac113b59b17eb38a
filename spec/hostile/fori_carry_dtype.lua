-- expect: 6: loop body: yielded i32[4] as value 1, which must match f32[4]
-- A loop body that changes the carried value's dtype.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.fori(0, 4, function(i, acc) return acc:astype("i32") end, mgpu.broadcast(0.0, { 4 }))
  end }
k()
