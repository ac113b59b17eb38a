-- expect: 6: a ref cannot be used as a value here; load it first with ref:load()
-- Storing a ref instead of its loaded value.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o)
    o:store(x)
  end }
k(mgpu.zeros(4))
