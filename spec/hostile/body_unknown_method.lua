-- expect: 6: traced arrays and scalars have no method or field 'softmax'
-- Calling a method that traced arrays do not have.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o)
    o:store(x:load():softmax())
  end }
k(mgpu.zeros(4))
