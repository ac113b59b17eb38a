-- expect: 6: atomic_cas: expected 2 values after the ref
-- atomic_cas with one value.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.atomic_cas(o:at(0), 1.0)
  end }
k()
