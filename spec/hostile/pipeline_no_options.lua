-- expect: 6: emit_pipeline: grid is required
-- emit_pipeline without options.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    local p = mgpu.emit_pipeline(function() end)
  end }
k(mgpu.zeros({ 64, 64 }))
