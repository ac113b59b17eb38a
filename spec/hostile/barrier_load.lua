-- expect: 7: load: the ref is a barrier, which holds no data
-- Loading a barrier as if it held data.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  scratch_shapes = { mgpu.Barrier{} },
  body = function(o, bar)
    local v = bar:load()
  end }
k()
