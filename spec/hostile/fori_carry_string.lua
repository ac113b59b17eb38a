-- expect: 6: expected a traced value or a number, got string
-- Carrying a string through a loop.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.fori(0, 4, function(i, s) return s end, "acc")
  end }
k()
