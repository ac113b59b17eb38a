-- expect: 6: run_scoped: allocation 1 must be mgpu.SMEM(...), mgpu.Barrier{...} or mgpu.ACC(...)
-- run_scoped with a table that is not an allocation.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.run_scoped(function(s) end, { 64 })
  end }
k()
