-- expect: 6: while_loop: body_fn returned 0 values but 1 are carried
-- A while_loop body that returns nothing.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.while_loop(function(i) return i:lt(4) end, function(i) end, 0)
  end }
k()
