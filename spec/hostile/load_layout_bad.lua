-- expect: 6: load layout must be an mgpu.Layout, got number
-- load with a number as its layout.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    o:store(o:load{ layout = 5 })
  end }
k()
