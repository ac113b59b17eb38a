-- expect: 6: fori: carried value 1 is a ref
-- Carrying a ref through a loop.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.fori(0, 4, function(i, r) return r end, o)
  end }
k()
