-- expect: 6: refs have no method or field 'read'
-- Calling a method that refs do not have.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o)
    o:store(x:read())
  end }
k(mgpu.zeros(4))
