-- expect: 6: fori: unroll must be at least 1 (or true), got 0
-- unroll = 0.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.fori(0, 4, function(i) end, { unroll = 0 })
  end }
k()
