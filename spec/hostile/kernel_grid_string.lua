-- expect: 6: grid must be a table of sizes
-- A string as the grid.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = "4x4", out_shape = mgpu.shape({ 4 }),
  body = function(o) end }
k()
