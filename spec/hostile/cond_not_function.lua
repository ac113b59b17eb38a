-- expect: 6: cond: the second argument (the true branch) must be a function, got number
-- mgpu.cond with numbers as branches.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.cond(mgpu.program_id(0):eq(0), 1, 2)
  end }
k()
