-- expect: 6: kernel body raised a non-string error: { scoped = 1 }
-- A scope whose function raises a table.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.run_scoped(function(s) error({ scoped = 1 }) end, mgpu.SMEM({ 64 }, "f32"))
  end }
k()
