-- expect: 6: set_max_registers: n must be a multiple of 8 between 24 and 256, got 7
-- set_max_registers(7).
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.set_max_registers(7, { action = "increase" })
  end }
k()
