-- expect: 6: load: layout wgmma does not fit f32[4]
-- The WGMMA layout on a 4-element array.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    o:store(o:load{ layout = mgpu.Layout.WGMMA })
  end }
k()
