-- expect: 6: named_scope: the second argument must be a function, got nil
-- named_scope without a function.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.named_scope("epilogue")
  end }
k()
