-- expect: 6: nd_loop: the body must be a function
-- nd_loop without a body.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    mgpu.nd_loop({ 4 }, {})
  end }
k(mgpu.zeros({ 64, 64 }))
