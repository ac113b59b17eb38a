-- expect: 6: wgmma_wait: n must be between 0 and 7
-- wgmma_wait(100).
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.wgmma_wait(100)
  end }
k()
