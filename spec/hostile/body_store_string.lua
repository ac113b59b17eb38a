-- expect: 6: store: the value must be a traced array or scalar, or a number, got string
-- Storing a string.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    o:store("hello")
  end }
k()
