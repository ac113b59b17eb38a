-- expect: 6: exp: not defined for dtype i32
-- exp of an integer array.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o)
    o:store(x:load():exp())
  end }
k(mgpu.zeros(4, "i32"))
