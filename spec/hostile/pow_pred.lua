-- expect: 6: cannot combine a number with a pred value
-- Comparison results used in arithmetic.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    o:store(o:load():lt(1.0) + 1.0)
  end }
k()
