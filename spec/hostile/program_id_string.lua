-- expect: 6: program_id axis must be an integer, got string
-- program_id with an axis name instead of a number.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    local i = mgpu.program_id("x")
  end }
k()
