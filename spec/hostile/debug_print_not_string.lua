-- expect: 6: debug_print: the first argument must be a format string, got number
-- debug_print without a format.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.debug_print(42)
  end }
k()
