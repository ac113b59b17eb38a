-- expect: 6: emit_pipeline: the body must be a function
-- emit_pipeline with a number as its body.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    local p = mgpu.emit_pipeline(1, { grid = { 2 } })
  end }
k(mgpu.zeros({ 64, 64 }))
