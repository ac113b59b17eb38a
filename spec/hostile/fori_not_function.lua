-- expect: 6: fori: third argument must be a function
-- mgpu.fori with a number as its body.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.fori(0, 4, 5)
  end }
k()
