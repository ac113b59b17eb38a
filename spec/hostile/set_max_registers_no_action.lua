-- expect: 6: set_max_registers: action must be "increase" or "decrease"
-- set_max_registers without its action.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.set_max_registers(128)
  end }
k()
