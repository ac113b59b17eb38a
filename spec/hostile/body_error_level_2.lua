-- expect: 6: blame the caller
-- error(msg, 2) in a body blames the library frame that called it: the report names the line that raised it.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    error("blame the caller", 2)
  end }
k()
