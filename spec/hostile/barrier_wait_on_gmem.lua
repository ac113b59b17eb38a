-- expect: 6: barrier_wait: operand 1 must be a barrier (mgpu.Barrier{...}), got &gmem f32[4]
-- barrier_wait on a GMEM output ref.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.barrier_wait(o)
  end }
k()
