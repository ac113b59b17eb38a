-- expect: 6: debug_print: the format has 2 placeholders ({}) but 1 value was given
-- Two placeholders and one value.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.debug_print("{} {}", mgpu.program_id(0))
  end }
k()
