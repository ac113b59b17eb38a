-- expect: 6: expected a traced value or a number, got string
-- mgpu.select with a string condition.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    o:store(mgpu.select("c", mgpu.broadcast(1.0, { 4 }), mgpu.broadcast(2.0, { 4 })))
  end }
k()
