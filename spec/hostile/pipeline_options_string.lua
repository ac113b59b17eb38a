-- expect: 6: emit_pipeline: options must be a table
-- emit_pipeline with a string as its options.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    local p = mgpu.emit_pipeline(function() end, "grid")
  end }
k(mgpu.zeros({ 64, 64 }))
