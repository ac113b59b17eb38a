-- expect: 6: broadcast_to shape[1] must be at least 1, got 0
-- Broadcasting to a zero-sized shape.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    o:store(mgpu.broadcast(1.0, { 0 }))
  end }
k()
