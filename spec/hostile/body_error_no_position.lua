-- expect: 6: bare message
-- error(msg, 0) carries no position: the report still names the line that raised it.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    error("bare message", 0)
  end }
k()
