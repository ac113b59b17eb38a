-- expect: 6: fori hi must be an integer, got 2.5
-- mgpu.fori with a fractional upper bound.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.fori(0, 2.5, function(i) end)
  end }
k()
