-- expect: 6: load: unknown option 'layuot'
-- A misspelt load option.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    o:store(o:load{ layuot = mgpu.Layout.WGMMA })
  end }
k()
