-- expect: 6: array too large for registers
-- Broadcasting to an array of 1e12 elements in registers.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    local big = mgpu.broadcast(1.0, { 1e6, 1e6 })
  end }
k()
