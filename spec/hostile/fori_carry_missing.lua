-- expect: 6: fori body returned 0 values but carries 1
-- A loop body that forgets to return its carry.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.fori(0, 4, function(i, acc) end, 0.0)
  end }
k()
