-- expect: 6: boom
-- error("boom") inside a kernel body.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    error("boom")
  end }
k()
