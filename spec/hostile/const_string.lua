-- expect: 6: const: the value must be a number or a boolean, got string
-- mgpu.const of a string.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    local c = mgpu.const("pi")
  end }
k()
