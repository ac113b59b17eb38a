-- expect: 6: a ref cannot be used in arithmetic; load it first with ref:load()
-- Adding to a ref instead of its loaded value.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o)
    o:store(x + 1)
  end }
k(mgpu.zeros(4))
