-- expect: 6: grid has 9 dimensions; at most 8 are supported
-- A grid of rank 9.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1, 1, 1, 1, 1, 1, 1, 1, 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o) end }
k()
