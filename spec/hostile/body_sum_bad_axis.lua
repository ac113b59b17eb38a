-- expect: 6: reduce_sum: axis 5 does not exist in f32[4] (rank 1)
-- Reducing along axis 5 of a 1-D array.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o)
    o:store(mgpu.broadcast(x:load():sum(5), { 4 }))
  end }
k(mgpu.zeros(4))
