-- expect: 6: traced values cannot be concatenated
-- Concatenating a traced value with a string.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o)
    print("x = " .. x:load())
  end }
k(mgpu.zeros(4))
