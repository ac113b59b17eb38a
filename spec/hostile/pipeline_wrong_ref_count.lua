-- expect: 8: emit_pipeline: called with 2 refs but has 1 in_specs and 0 out_specs
-- A pipeline called with more refs than specs.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    local p = mgpu.emit_pipeline(function(i, xs) end,
      { grid = { 2 }, in_specs = { mgpu.BlockSpec{ { 32, 64 }, function(i) return i, 0 end } } })
    p(x, o)
  end }
k(mgpu.zeros({ 64, 64 }))
