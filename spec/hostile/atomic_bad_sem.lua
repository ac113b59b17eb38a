-- expect: 6: atomic_add: sem must be relaxed, acquire, release or acq_rel, got strong
-- An unknown memory order.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.atomic_add(o:at(0), 1.0, { sem = "strong" })
  end }
k()
