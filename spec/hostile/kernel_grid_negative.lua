-- expect: 6: grid[1] must be at least 1, got -2
-- A negative grid, found when the kernel is called.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { -2 }, out_shape = mgpu.shape({ 4 }),
  body = function(o) end }
k()
