-- expect: 6: barrier_wait: expected a barrier, got number
-- barrier_wait on a number.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.barrier_wait(0)
  end }
k()
