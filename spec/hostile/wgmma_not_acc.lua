-- expect: 6: wgmma: the accumulator must be allocated from an mgpu.ACC
-- wgmma with a number for the accumulator.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.wgmma(0, o, o)
  end }
k()
