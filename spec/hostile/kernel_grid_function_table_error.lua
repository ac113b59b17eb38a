-- expect: 4: grid function raised a non-string error: { why = "no" }
-- A grid function that raises a table.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = function(x) error({ why = "no" }) end, out_shape = mgpu.shape({ 4 }),
  body = function(x, o) end }
k(mgpu.zeros(4))
