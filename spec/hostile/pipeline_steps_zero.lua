-- expect: 6: emit_pipeline: max_concurrent_steps must be at least 1, got 0
-- max_concurrent_steps = 0.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    local p = mgpu.emit_pipeline(function() end, { grid = { 2 }, max_concurrent_steps = 0 })
  end }
k(mgpu.zeros({ 64, 64 }))
