-- expect: 6: kernel body raised a non-string error: { step = 3 }
-- A loop body that raises a table.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.fori(0, 4, function(i) error({ step = 3 }) end)
  end }
k()
