-- expect: 6: program_id: axis 3 is out of range for a grid of rank 1
-- program_id(3) in a 1-D grid.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    o:store(mgpu.broadcast(mgpu.program_id(3), { 4 }):astype("f32"))
  end }
k()
