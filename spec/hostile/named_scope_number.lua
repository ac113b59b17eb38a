-- expect: 6: named_scope: the name must be a non-empty string
-- named_scope with a number as its name.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.named_scope(1, function() end)
  end }
k()
