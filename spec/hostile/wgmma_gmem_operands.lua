-- expect: 6: wgmma: operand 1 must be an accumulator (mgpu.ACC), got &gmem f32[4]
-- wgmma with GMEM refs as operands and accumulator.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.wgmma(o, o, o)
  end }
k()
