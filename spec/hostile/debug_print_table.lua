-- expect: 6: debug_print: value 1 must be a traced value or a number, got table
-- Printing a Lua table.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.debug_print("{}", { 1, 2 })
  end }
k()
