-- expect: 7: at: index 5 is out of range for dimension 0 of size 2
-- Indexing barrier 5 of an array of 2.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  scratch_shapes = { mgpu.Barrier{ num_barriers = 2 } },
  body = function(o, bar)
    mgpu.barrier_arrive(bar:at(5))
  end }
k()
