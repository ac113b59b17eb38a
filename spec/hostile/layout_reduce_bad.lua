-- expect: 6: load: layout 'wgmma.reduce(5)': reduce axis out of range for the layout
-- A load in WGMMA:reduce(5), an axis the layout does not tile.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64 }),
  body = function(o)
    o:store(o:load{ layout = mgpu.Layout.WGMMA:reduce(5) })
  end }
k()
