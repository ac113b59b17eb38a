-- expect: 6: index 1 must be an integer, a traced scalar, mgpu.ds(...) or mgpu.all, got string
-- A string index.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o)
    o:store(x:at("first"):load())
  end }
k(mgpu.zeros(4))
