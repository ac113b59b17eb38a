-- expect: 6: run_scoped(fn, mgpu.SMEM(...), ...) or run_scoped({ name = mgpu.SMEM(...) }, fn)
-- run_scoped with a number.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.run_scoped(5)
  end }
k()
