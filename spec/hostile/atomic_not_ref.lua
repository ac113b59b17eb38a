-- expect: 6: atomic_add: the first argument must be a GMEM ref (one element)
-- atomic_add on a number.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.atomic_add(5, 1)
  end }
k()
