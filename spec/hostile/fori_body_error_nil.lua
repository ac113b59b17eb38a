-- expect: 6: kernel body raised a non-string error: nil
-- A loop body that raises nil.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.fori(0, 4, function(i) error(nil) end)
  end }
k()
