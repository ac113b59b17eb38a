-- expect: 9: barrier index -1 is outside its allocation of 2 barriers (0 to 1)
-- A traced barrier index that goes negative: (k - 1) % n at k = 0.
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({ 4 }, "f32"),
  scratch_shapes = { mgpu.Barrier{ num_barriers = 2 } },
  body = function(o, bars)
    mgpu.fori(0, 2, function(i)
      local slot = (i - 1) % 2
      mgpu.barrier_arrive(bars:at(slot))
    end)
  end }
k()
