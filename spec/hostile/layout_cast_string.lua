-- expect: 6: layout_cast layout must be an mgpu.Layout, got string
-- layout_cast to a string instead of a layout.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    o:store(mgpu.layout_cast(mgpu.broadcast(1.0, { 4 }), "WGMMA"))
  end }
k()
