-- expect: 6: when: second argument must be a function
-- mgpu.when with a number as its body.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.when(mgpu.program_id(0):eq(0), 1)
  end }
k()
