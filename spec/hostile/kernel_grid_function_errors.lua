-- expect: 4: no grid for you
-- A grid function that raises an error.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = function(x) error("no grid for you") end, out_shape = mgpu.shape({ 4 }),
  body = function(x, o) end }
k(mgpu.zeros(4))
