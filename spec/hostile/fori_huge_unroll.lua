-- expect: 6: fori: unroll = true over 1000000000 steps would trace the body 1000000000 times (at most 65536)
-- unroll = true over 1e9 steps would trace a billion copies of the body.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.fori(0, 1e9, function(i) end, { unroll = true })
  end }
k()
