-- expect: 6: cond: the third argument (the false branch) must be a function, got nil
-- mgpu.cond without a false branch.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.cond(mgpu.program_id(0):eq(0), function() return 1 end)
  end }
k()
