-- expect: 6: cond: the true branch returned 2 values but the false branch 1
-- Branches returning different numbers of values.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.cond(mgpu.program_id(0):eq(0), function() return 1, 2 end, function() return 1 end)
  end }
k()
