-- expect: 6: debug_print: only {} placeholders are supported
-- A format with an unbalanced brace.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.debug_print("{", mgpu.program_id(0))
  end }
k()
