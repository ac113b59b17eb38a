-- expect: 6: emit_pipeline: unknown option 'depth'
-- A misspelt pipeline option.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    local p = mgpu.emit_pipeline(function() end, { grid = { 2 }, depth = 2 })
  end }
k(mgpu.zeros({ 64, 64 }))
