-- expect: 6: nd_loop: options must be a table
-- nd_loop with a number as its options.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    mgpu.nd_loop({ 4 }, 3, function(info) end)
  end }
k(mgpu.zeros({ 64, 64 }))
