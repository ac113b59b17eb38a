-- expect: 6: grid[2] must be an integer, got 2.5
-- A fractional grid size.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1, 5 / 2 }, out_shape = mgpu.shape({ 4 }),
  body = function(o) end }
k()
