-- expect: 6: debug_print: value 1 is a ref
-- Printing a ref.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.debug_print("{}", o)
  end }
k()
