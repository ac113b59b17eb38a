-- expect: 6: atomic_add: the ref must be one element
-- atomic_add on a whole array.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.atomic_add(o, 1.0)
  end }
k()
