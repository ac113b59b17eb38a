-- expect: 6: kernel body raised a non-string error: { scope = 1 }
-- A named scope whose function raises a table.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.named_scope("s", function() error({ scope = 1 }) end)
  end }
k()
