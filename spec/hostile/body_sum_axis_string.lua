-- expect: 6: sum: axes must be an axis number or a table of them
-- Reducing along axis "rows".
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o)
    o:store(mgpu.broadcast(x:load():sum("rows"), { 4 }))
  end }
k(mgpu.zeros(4))
