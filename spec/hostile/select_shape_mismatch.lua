-- expect: 6: select: shapes f32[4] and f32[8] do not match
-- mgpu.select between arrays of different shapes.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    o:store(mgpu.select(mgpu.broadcast(true, { 4 }), mgpu.broadcast(1.0, { 4 }), mgpu.broadcast(2.0, { 8 })))
  end }
k()
