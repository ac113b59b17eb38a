-- expect: 6: argument 1 must be an mgpu array or a number, got table
-- A Lua table of numbers where an array goes.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o) end }
k({ 1, 2, 3, 4 })
