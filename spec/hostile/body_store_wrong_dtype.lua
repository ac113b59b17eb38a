-- expect: 6: store: dtypes f32 and i32 do not match
-- Storing an i32 array into an f32 ref.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o)
    o:store(x:load())
  end }
k(mgpu.zeros(4, "i32"))
