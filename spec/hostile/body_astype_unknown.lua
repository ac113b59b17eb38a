-- expect: 6: unknown dtype
-- astype to an unknown dtype.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o)
    o:store(x:load():astype("float"))
  end }
k(mgpu.zeros(4))
