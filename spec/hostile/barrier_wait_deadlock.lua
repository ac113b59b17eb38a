-- expect: 8: deadlock: every warpgroup still running waits on a barrier that cannot complete
-- Waiting on a barrier nobody arrives at.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  scratch_shapes = { mgpu.Barrier{} },
  body = function(o, bar)
    o:store(0)
    mgpu.barrier_wait(bar)
  end }
k()
