-- expect: 6: a traced value cannot be called
-- Calling a traced value as a function.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o)
    o:store(x:load()(1))
  end }
k(mgpu.zeros(4))
