-- expect: 6: run_scoped: result 1 is a ref; its SMEM ends with the scope
-- A scoped SMEM ref returned from its scope.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    local s = mgpu.run_scoped(function(s) return s end, mgpu.SMEM({ 64 }, "f32"))
  end }
k()
