-- expect: 6: add: dtypes f32 and i32 do not match
-- Adding an f32 array and an i32 array.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, y, o)
    o:store(x:load() + y:load())
  end }
k(mgpu.zeros(4), mgpu.zeros(4, "i32"))
