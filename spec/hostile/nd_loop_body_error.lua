-- expect: 6: kernel body raised a non-string error: { at = 2 }
-- An nd_loop body that raises a table.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    mgpu.nd_loop({ 4 }, function(info) error({ at = 2 }) end)
  end }
k(mgpu.zeros({ 64, 64 }))
